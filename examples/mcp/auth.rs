//! `mcp login NAME [--headless]`, `mcp logout NAME`, `mcp auth status`: OAuth for remote
//! servers. `login` opens the system browser at the server's authorization page and receives
//! the answer on a loopback listener (`--headless` follows the authorization URL itself, for
//! servers that approve without a user, and CI); tokens go to `~/.mcp-runtime/auth.json`
//! (0600). `status` shows a server waiting for one as `needs login`.

use std::path::Path;
use std::sync::Arc;

use mcp_runtime::config::oauth::{
    provider_for, uses_oauth, Authorizer, BrowserAuthorizer, HeadlessAuthorizer, NoLoginAuthorizer,
    OAuthOptions,
};
use mcp_runtime::config::FileAuthStorage;
use serde_json::json;

use crate::args::Args;

/// `login NAME`: connects the server (which then needs a login), logs in, reconnects it.
pub fn login(args: &Args, project: &Path, name: &str, headless: bool) -> Result<u8, String> {
    let mut args = args.clone();
    args.servers = vec![name.to_owned()];
    let session = crate::servers::start(&args, project)?;
    let authorizer: Arc<dyn Authorizer> = if headless {
        Arc::new(HeadlessAuthorizer::new(OAuthOptions::default()))
    } else {
        Arc::new(BrowserAuthorizer::new())
    };
    if !headless {
        eprintln!("opening your browser to log in to {name}...");
    }
    let outcome = session.manager.login(name, authorizer);
    let code = match outcome {
        Ok(()) => {
            let tools = session
                .manager
                .get_tools()
                .iter()
                .filter(|t| t.server == name)
                .count();
            println!("logged in to {name} ({tools} tools)");
            0
        }
        Err(e) => {
            eprintln!("mcp: login to {name} failed: {e}");
            1
        }
    };
    session.manager.disconnect_all();
    Ok(code)
}

/// `logout NAME`: forgets the server's tokens.
pub fn logout(args: &Args, project: &Path, name: &str) -> Result<u8, String> {
    let loaded = crate::discovered(args, project)?;
    let server = loaded
        .discovered
        .iter()
        .find(|d| d.name == name && !d.shadowed)
        .ok_or_else(|| format!("no MCP server named {name}"))?;
    let provider = provider_for(
        &server.config,
        Arc::new(FileAuthStorage::user_default()),
        Arc::new(NoLoginAuthorizer),
        OAuthOptions::default(),
    )
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("{name} does not use OAuth"))?;
    provider.logout().map_err(|e| e.to_string())?;
    println!("logged out of {name}");
    Ok(0)
}

/// `auth status`: what is stored for every server OAuth applies to.
pub fn status(args: &Args, project: &Path) -> Result<u8, String> {
    let loaded = crate::discovered(args, project)?;
    let storage = Arc::new(FileAuthStorage::user_default());
    let mut rows = Vec::new();
    for d in loaded
        .discovered
        .iter()
        .filter(|d| !d.shadowed && uses_oauth(&d.config))
    {
        let provider = provider_for(
            &d.config,
            storage.clone(),
            Arc::new(NoLoginAuthorizer),
            OAuthOptions::default(),
        );
        let row = match provider {
            Ok(Some(p)) => {
                let s = p.status();
                json!({"name": d.name, "loggedIn": s.logged_in, "issuer": s.issuer,
                       "expiresAt": s.expires_at, "refreshable": s.refreshable, "scopes": s.scopes})
            }
            Ok(None) => continue,
            Err(e) => json!({"name": d.name, "loggedIn": false, "error": e.to_string()}),
        };
        rows.push(row);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return Ok(0);
    }
    if rows.is_empty() {
        println!("no server uses OAuth");
    }
    for r in &rows {
        let name = r["name"].as_str().unwrap_or("?");
        match (r["loggedIn"].as_bool(), r["error"].as_str()) {
            (_, Some(e)) => println!("{name}: {e}"),
            (Some(true), _) => println!(
                "{name}: logged in (issuer {}, scopes {}{})",
                r["issuer"].as_str().unwrap_or("?"),
                r["scopes"]
                    .as_array()
                    .map(|s| s
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(" "))
                    .unwrap_or_default(),
                if r["refreshable"].as_bool() == Some(true) {
                    ", refreshable"
                } else {
                    ""
                }
            ),
            _ => println!("{name}: not logged in (mcp login {name})"),
        }
    }
    Ok(0)
}
