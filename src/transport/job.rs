//! Windows: a server and everything it starts run in a Job Object made to kill them all when its
//! last handle closes. The handle is ours alone (not inheritable), so the job ends with this
//! process: at `close` (we terminate it), and when the host is killed outright or crashes (the
//! system closes our handles). It is the Windows answer to the process group and the guardian
//! of Unix.
//!
//! A process the server starts joins the job by itself (jobs are inherited), unless it asks to
//! leave with `CREATE_BREAKAWAY_FROM_JOB`, which this job does not allow.

use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::Child;

use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::WaitForSingleObject;

/// The exit code the job's processes get when it is terminated (what `TerminateProcess`
/// callers conventionally use).
const TERMINATED: u32 = 1;

/// A Job Object that kills its processes when dropped.
pub(crate) struct Job(OwnedHandle);

impl Job {
    /// A new job with kill-on-close, holding `child`. `None` when the system refuses (the error
    /// is logged; the server then runs without one, and `close` ends only the server itself).
    pub(crate) fn hold(child: &Child) -> Option<Job> {
        // SAFETY: no security attributes (the handle is not inherited) and no name.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            log::warn!(
                "cannot create a job object for process {}: {}",
                child.id(),
                std::io::Error::last_os_error()
            );
            return None;
        }
        // SAFETY: a handle CreateJobObjectW just returned, owned from here on.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(raw) });
        // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION is valid (all integers).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the job handle is valid and `limits` is the structure the class names.
        let set = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        // SAFETY: both handles are valid: the job's, and the child's (it lives in `child`).
        let assigned =
            set != 0 && unsafe { AssignProcessToJobObject(job.raw(), child.as_raw_handle()) } != 0;
        if !assigned {
            log::warn!(
                "cannot put process {} in a job object: {}",
                child.id(),
                std::io::Error::last_os_error()
            );
            return None;
        }
        Some(job)
    }

    /// Ends every process of the job now.
    pub(crate) fn terminate(&self) {
        // SAFETY: a valid job handle.
        unsafe { TerminateJobObject(self.raw(), TERMINATED) };
    }

    /// How many processes of the job are still running (`None` when it cannot be asked).
    pub(crate) fn active(&self) -> Option<u32> {
        // SAFETY: a zeroed accounting structure is valid (all integers).
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: a valid job handle and the structure the class names, with its size.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        (ok != 0).then_some(info.ActiveProcesses)
    }

    fn raw(&self) -> windows_sys::Win32::Foundation::HANDLE {
        self.0.as_raw_handle()
    }
}

/// A process's handle, kept as a number so the value that holds it may cross threads (it is
/// valid while the `Child` it came from lives).
#[derive(Clone, Copy)]
pub(crate) struct ProcessHandle(usize);

impl ProcessHandle {
    /// `child`'s handle; the caller keeps `child` alive as long as this is used.
    pub(crate) fn of(child: &Child) -> ProcessHandle {
        ProcessHandle(child.as_raw_handle() as usize)
    }

    /// Blocks until the process exits or `left` passes (its handle is signalled at exit).
    pub(crate) fn wait(self, left: std::time::Duration) {
        let ms = left.as_millis().clamp(1, u32::MAX as u128 - 1) as u32;
        // SAFETY: a process handle that stays valid while its `Child` lives (see `of`).
        unsafe { WaitForSingleObject(self.0 as windows_sys::Win32::Foundation::HANDLE, ms) };
    }
}
