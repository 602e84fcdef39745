//! The host's callbacks the manager runs, behind a catch: a change listener that panics is
//! logged and the other listeners (and the next change) are still told; a [`ToolCache`] that
//! panics is a miss on a read and an error on a write, as a cache that failed.

use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::manager::cache::ToolCache;
use crate::panic::catch_in;
use crate::protocol::{Listing, Tool};

/// Tells each listener of `servers`; one that panics is logged and the rest are told.
pub(crate) fn tell<L: Fn(&[String]) + ?Sized>(
    what: &str,
    listeners: &[Arc<L>],
    servers: &[String],
) {
    for listener in listeners {
        let _ = catch_in(what, || listener(servers));
    }
}

/// The host's cache, each call caught.
pub(crate) struct CaughtCache(Arc<dyn ToolCache>);

impl CaughtCache {
    /// `cache`, wrapped.
    pub(crate) fn wrap(cache: Arc<dyn ToolCache>) -> Arc<dyn ToolCache> {
        Arc::new(CaughtCache(cache))
    }
}

impl ToolCache for CaughtCache {
    fn get(&self, server: &str, config_hash: &str) -> Option<Vec<Arc<Tool>>> {
        catch_in("the ToolCache's get", || self.0.get(server, config_hash))
            .ok()
            .flatten()
    }

    fn set(&self, server: &str, config_hash: &str, tools: &[Arc<Tool>]) -> Result<(), Error> {
        catch_in("the ToolCache's set", || {
            self.0.set(server, config_hash, tools)
        })?
    }

    fn get_features(&self, server: &str, config_hash: &str) -> Option<Value> {
        catch_in("the ToolCache's get_features", || {
            self.0.get_features(server, config_hash)
        })
        .ok()
        .flatten()
    }

    fn set_features(&self, server: &str, config_hash: &str, features: &Value) -> Result<(), Error> {
        catch_in("the ToolCache's set_features", || {
            self.0.set_features(server, config_hash, features)
        })?
    }

    fn set_listing(
        &self,
        server: &str,
        config_hash: &str,
        tools: &[Arc<Tool>],
        listing: &Listing,
    ) -> Result<(), Error> {
        catch_in("the ToolCache's set_listing", || {
            self.0.set_listing(server, config_hash, tools, listing)
        })?
    }

    fn era(&self, server: &str, config_hash: &str) -> Option<String> {
        catch_in("the ToolCache's era", || self.0.era(server, config_hash))
            .ok()
            .flatten()
    }
}
