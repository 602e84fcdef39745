//! A temporary home and project for the discovery and writer tests.

use std::path::PathBuf;

use mcp_runtime::config::{load_all_mcp_configs, DiscoveryOptions, ProjectTrust};

/// A temporary home and project.
pub struct Fixture {
    pub root: PathBuf,
}

impl Fixture {
    pub fn new(name: &str) -> Fixture {
        let root =
            std::env::temp_dir().join(format!("mcp-discovery-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Fixture { root }
    }
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
    /// Discovery over the fixture, trusting its project servers (the trust gate has its own
    /// tests in tests/trust.rs).
    pub fn options(&self) -> DiscoveryOptions {
        DiscoveryOptions {
            home: Some(self.home()),
            project_trust: ProjectTrust::TrustAll,
            ..DiscoveryOptions::default()
        }
    }
    pub fn load(&self) -> mcp_runtime::config::LoadedConfigs {
        load_all_mcp_configs(&self.project(), &self.options())
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
