//! One write per HTTP request.
//!
//! `ureq` transmits a request's head and its body separately: two writes, two TCP segments,
//! and often two wake-ups of the server. The [`Cork`] connector, last in the agent's chain
//! (above TLS, so a request is one TLS record too), wraps each connection's transport: what
//! `ureq` transmits is held back, and sent in one write as soon as `ureq` turns to waiting for
//! input (or the held bytes fill the output buffer).

use std::fmt;

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// The connector that corks every transport made by the connectors before it.
#[derive(Debug, Default)]
pub(crate) struct Cork;

impl<In: Transport> Connector<In> for Cork {
    type Out = Corked<In>;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| Corked {
            inner,
            held: Vec::new(),
        }))
    }
}

/// A transport whose output is sent in one piece per request.
pub(crate) struct Corked<T> {
    inner: T,
    held: Vec<u8>,
}

impl<T: Transport> Corked<T> {
    fn flush(&mut self, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let mut start = 0;
        while start < self.held.len() {
            let out = self.inner.buffers().output();
            let n = out.len().min(self.held.len() - start);
            out[..n].copy_from_slice(&self.held[start..start + n]);
            self.inner.transmit_output(n, timeout)?;
            start += n;
        }
        self.held.clear();
        Ok(())
    }
}

impl<T: Transport> Transport for Corked<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let capacity = self.inner.buffers().output().len();
        self.held
            .extend_from_slice(&self.inner.buffers().output()[..amount]);
        // A large body goes out as it comes: hold at most one buffer's worth.
        if self.held.len() >= capacity {
            self.flush(timeout)?;
        }
        Ok(())
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush(timeout)?;
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush(timeout)?;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

impl<T: fmt::Debug> fmt::Debug for Corked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Corked")
            .field("inner", &self.inner)
            .field("held", &self.held.len())
            .finish()
    }
}
