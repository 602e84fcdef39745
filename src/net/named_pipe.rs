//! A Windows named pipe as an HTTP connection's socket (`pipe:///pipe/name`, as VS Code names a
//! server listening on `\\.\pipe\name`; see `url::local`).
//!
//! The pipe is opened for overlapped I/O, so that every read and write waits with a bound (a
//! synchronous pipe has no timeout) and another thread can end them: [`Pipe::shutdown`]
//! cancels what is pending (`CancelIoEx`) and refuses what comes after.

use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use windows_sys::Win32::Foundation::{
    ERROR_BROKEN_PIPE, ERROR_IO_PENDING, ERROR_OPERATION_ABORTED, ERROR_PIPE_BUSY,
    ERROR_PIPE_NOT_CONNECTED, HANDLE, WAIT_TIMEOUT,
};
use windows_sys::Win32::Storage::FileSystem::{ReadFile, WriteFile, FILE_FLAG_OVERLAPPED};
use windows_sys::Win32::System::Pipes::PeekNamedPipe;
use windows_sys::Win32::System::Threading::CreateEventW;
use windows_sys::Win32::System::IO::{
    CancelIoEx, GetOverlappedResult, GetOverlappedResultEx, OVERLAPPED,
};

/// An open named pipe.
#[derive(Debug)]
pub(crate) struct Pipe {
    handle: OwnedHandle,
    /// The pipe's name (`\\.\pipe\name`), for `Debug`.
    name: String,
    shut: AtomicBool,
    read_timeout: Mutex<Option<Duration>>,
    write_timeout: Mutex<Option<Duration>>,
}

impl Pipe {
    /// Opens the pipe `name` (`\\.\pipe\name`). A pipe whose every instance is busy is tried
    /// again until `deadline`.
    pub(crate) fn open(name: &str, deadline: Option<Instant>) -> io::Result<Pipe> {
        loop {
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(FILE_FLAG_OVERLAPPED)
                .open(name);
            match opened {
                Ok(file) => {
                    return Ok(Pipe {
                        handle: file.into(),
                        name: name.to_owned(),
                        shut: AtomicBool::new(false),
                        read_timeout: Mutex::new(None),
                        write_timeout: Mutex::new(None),
                    })
                }
                Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) {
        *self.read_timeout.lock() = t;
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) {
        *self.write_timeout.lock() = t;
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle() as HANDLE
    }

    /// Ends the pipe for every user: pending reads and writes are cancelled, later ones fail.
    pub(crate) fn shutdown(&self) {
        self.shut.store(true, Ordering::SeqCst);
        // SAFETY: cancels this handle's pending I/O, whichever thread started it.
        unsafe { CancelIoEx(self.raw(), std::ptr::null()) };
    }

    /// Whether nothing waits to be read and the other end is still there.
    pub(crate) fn is_idle(&self) -> bool {
        let mut available = 0u32;
        // SAFETY: asks how many bytes wait, reading none.
        let ok = unsafe {
            PeekNamedPipe(
                self.raw(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                &mut available,
                std::ptr::null_mut(),
            )
        };
        ok != 0 && available == 0 && !self.shut.load(Ordering::SeqCst)
    }

    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = *self.read_timeout.lock();
        match self.overlapped(buf.as_mut_ptr(), buf.len(), false, timeout) {
            // The other end closed it: the end of the stream.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(c) if c == ERROR_BROKEN_PIPE as i32 || c == ERROR_PIPE_NOT_CONNECTED as i32
                ) =>
            {
                Ok(0)
            }
            other => other,
        }
    }

    pub(crate) fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let timeout = *self.write_timeout.lock();
        self.overlapped(buf.as_ptr().cast_mut(), buf.len(), true, timeout)
    }

    /// One read or write, waited for up to `timeout` (none: until it completes or the pipe is
    /// shut down).
    fn overlapped(
        &self,
        buf: *mut u8,
        len: usize,
        write: bool,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        if self.shut.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::NotConnected.into());
        }
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        // SAFETY: a manual-reset event, owned by `event` below.
        let event = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
        if event.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `event` is a handle we just created and own alone.
        let event = unsafe { OwnedHandle::from_raw_handle(event as _) };
        // SAFETY: all-zero is a valid OVERLAPPED (offsets 0, no event) before the event is set.
        let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
        ov.hEvent = event.as_raw_handle() as HANDLE;
        let mut n = 0u32;
        // SAFETY: `buf` is valid for `len` bytes and `ov` outlives the operation: every path
        // below waits for it to complete (or be cancelled) before returning.
        let started = unsafe {
            if write {
                WriteFile(self.raw(), buf, len, std::ptr::null_mut(), &mut ov)
            } else {
                ReadFile(self.raw(), buf, len, std::ptr::null_mut(), &mut ov)
            }
        };
        if started == 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(ERROR_IO_PENDING as i32) {
                return Err(e);
            }
        }
        // A shutdown that came between the check above and the start: cancel it here.
        if self.shut.load(Ordering::SeqCst) {
            // SAFETY: cancels this operation only.
            unsafe { CancelIoEx(self.raw(), &ov) };
        }
        let wait = timeout.map_or(u32::MAX, |t| {
            u32::try_from(t.as_millis()).unwrap_or(u32::MAX - 1).max(1)
        });
        // SAFETY: waits for the operation started above.
        let done = unsafe { GetOverlappedResultEx(self.raw(), &ov, &mut n, wait, 0) };
        if done != 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(WAIT_TIMEOUT as i32) {
            // SAFETY: cancels it, then waits for the cancellation, so that `buf` and `ov` are
            // no longer used once we return.
            unsafe {
                CancelIoEx(self.raw(), &ov);
                GetOverlappedResult(self.raw(), &ov, &mut n, 1);
            }
            return Err(io::ErrorKind::TimedOut.into());
        }
        if e.raw_os_error() == Some(ERROR_OPERATION_ABORTED as i32) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the connection was shut down",
            ));
        }
        Err(e)
    }
}
