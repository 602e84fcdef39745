//! A host's [`AuthProvider`] behind a catch: a method that panics is logged and answers as a
//! provider with nothing to give (no header, no re-send), and its panic becomes the provider's
//! [`refusal`](AuthProvider::refusal), so the request it served fails with that
//! [`Error::Internal`] instead of a bare `401`; the connection stays.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::Error;
use crate::net::target::{AuthProvider, HttpTarget};
use crate::panic::catch_in;

/// `target` with its provider (if any) behind the catch: what a connection uses throughout.
pub(crate) fn caught(target: &HttpTarget) -> HttpTarget {
    HttpTarget {
        auth: target.auth.clone().map(CaughtAuth::wrap),
        ..target.clone()
    }
}

/// The host's provider, each call caught.
pub(crate) struct CaughtAuth {
    inner: Arc<dyn AuthProvider>,
    /// The last panic, until it is reported as the refusal.
    panicked: Mutex<Option<Error>>,
}

impl CaughtAuth {
    /// `provider`, wrapped.
    pub(crate) fn wrap(provider: Arc<dyn AuthProvider>) -> Arc<dyn AuthProvider> {
        Arc::new(CaughtAuth {
            inner: provider,
            panicked: Mutex::new(None),
        })
    }

    /// `f` on the host's provider; its panic (at `place`) is kept for the refusal.
    fn call<T: Default>(&self, place: &str, f: impl FnOnce(&dyn AuthProvider) -> T) -> T {
        catch_in(place, || f(&*self.inner)).unwrap_or_else(|e| {
            *self.panicked.lock() = Some(e);
            T::default()
        })
    }
}

impl AuthProvider for CaughtAuth {
    fn authorization(&self) -> Option<String> {
        self.call("the AuthProvider's authorization", |p| p.authorization())
    }

    fn authorize_request(&self, method: &str, url: &str) -> Vec<(String, String)> {
        self.call("the AuthProvider's authorize_request", |p| {
            p.authorize_request(method, url)
        })
    }

    fn on_nonce(&self, url: &str, nonce: &str) {
        self.call("the AuthProvider's on_nonce", |p| p.on_nonce(url, nonce));
    }

    fn on_unauthorized(&self, www_authenticate: Option<&str>, retries: u32) -> bool {
        self.call("the AuthProvider's on_unauthorized", |p| {
            p.on_unauthorized(www_authenticate, retries)
        })
    }

    fn on_forbidden(&self, www_authenticate: &str, retries: u32) -> bool {
        self.call("the AuthProvider's on_forbidden", |p| {
            p.on_forbidden(www_authenticate, retries)
        })
    }

    fn refusal(&self) -> Option<Error> {
        if let Some(e) = self.panicked.lock().take() {
            return Some(e);
        }
        self.call("the AuthProvider's refusal", |p| p.refusal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;

    impl AuthProvider for Panics {
        fn authorization(&self) -> Option<String> {
            panic!("no token today")
        }
    }

    #[test]
    fn a_panic_is_no_header_then_the_refusal() {
        let p = CaughtAuth::wrap(Arc::new(Panics));
        assert!(p.authorize_request("POST", "http://x/").is_empty());
        assert!(!p.on_unauthorized(None, 0));
        let refusal = p.refusal().expect("the panic");
        assert!(refusal.to_string().contains("no token today"), "{refusal}");
        assert!(p.refusal().is_none());
    }
}
