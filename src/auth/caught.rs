//! The host's [`AuthStorage`] and [`Authorizer`] behind a catch: a method that panics is
//! logged and fails as that method fails (an error; a credential it could not read is none),
//! so the authorization it served fails with [`Error::Internal`] and nothing else does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::authorizer::{AuthorizationSession, Authorizer};
use super::storage::{AuthStorage, Credential};
use crate::error::Error;
use crate::panic::catch_in;

/// The host's store, each call caught.
pub(crate) struct CaughtStorage(Arc<dyn AuthStorage>);

impl CaughtStorage {
    pub(crate) fn wrap(storage: Arc<dyn AuthStorage>) -> Arc<dyn AuthStorage> {
        Arc::new(CaughtStorage(storage))
    }
}

impl AuthStorage for CaughtStorage {
    fn get(&self, id: &str) -> Option<Credential> {
        catch_in("the AuthStorage's get", || self.0.get(id))
            .ok()
            .flatten()
    }

    fn set(&self, id: &str, credential: Credential) -> Result<(), Error> {
        catch_in("the AuthStorage's set", || self.0.set(id, credential))?
    }

    fn remove(&self, id: &str) -> Result<(), Error> {
        catch_in("the AuthStorage's remove", || self.0.remove(id))?
    }

    fn exclusive(&self, bound: Duration) -> Result<Box<dyn Send>, Error> {
        catch_in("the AuthStorage's exclusive", || self.0.exclusive(bound))?
    }
}

/// The host's authorizer, each call caught (and the sessions it begins).
pub(crate) struct CaughtAuthorizer(Arc<dyn Authorizer>);

impl CaughtAuthorizer {
    pub(crate) fn wrap(authorizer: Arc<dyn Authorizer>) -> Arc<dyn Authorizer> {
        Arc::new(CaughtAuthorizer(authorizer))
    }
}

impl Authorizer for CaughtAuthorizer {
    fn begin(&self, callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
        let session = catch_in("the Authorizer's begin", || self.0.begin(callback_port))??;
        Ok(Box::new(CaughtSession(session)))
    }
}

struct CaughtSession(Box<dyn AuthorizationSession>);

impl AuthorizationSession for CaughtSession {
    fn redirect_uri(&self) -> String {
        catch_in("the AuthorizationSession's redirect_uri", || {
            self.0.redirect_uri()
        })
        .unwrap_or_default()
    }

    fn authorize(
        self: Box<Self>,
        authorization_url: &str,
        deadline: Instant,
    ) -> Result<String, Error> {
        catch_in("the AuthorizationSession's authorize", move || {
            self.0.authorize(authorization_url, deadline)
        })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;

    impl AuthStorage for Panics {
        fn get(&self, _: &str) -> Option<Credential> {
            panic!("get")
        }
        fn set(&self, _: &str, _: Credential) -> Result<(), Error> {
            panic!("set")
        }
        fn remove(&self, _: &str) -> Result<(), Error> {
            panic!("remove")
        }
    }

    impl Authorizer for Panics {
        fn begin(&self, _: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
            panic!("begin")
        }
    }

    #[test]
    fn a_panicking_store_or_authorizer_fails_as_an_error() {
        let storage = CaughtStorage::wrap(Arc::new(Panics));
        assert!(storage.get("x").is_none());
        assert!(matches!(storage.remove("x"), Err(Error::Internal { .. })));
        let authorizer = CaughtAuthorizer::wrap(Arc::new(Panics));
        match authorizer.begin(None) {
            Err(Error::Internal { place, message }) => {
                assert_eq!(
                    (place.as_str(), message.as_str()),
                    ("the Authorizer's begin", "begin")
                )
            }
            _ => panic!("not an internal error"),
        }
    }
}
