//! Log lines to the Windows event log, as nats-server's `logger/syslog_windows.go` writes
//! them: in the Application log, one event per line, the text
//! `pid[1234][NOTICE]: message`.
//!
//! The event source is the program's name (`beaver`). So that the Event Viewer shows the
//! text rather than "the description for Event ID 1 cannot be found", the source is
//! registered the way Go's `eventlog.InstallAsEventCreate` does it: a registry key
//! `HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\<source>` whose
//! `EventMessageFile` is `%SystemRoot%\System32\EventCreate.exe` (with `TypesSupported`
//! and `CustomSource`, as Go writes them), whose message table
//! prints `%1` for the event ids 1 to 1000. Creating the key needs an administrator (a
//! service running as LocalSystem is one); when it cannot be created the events are written
//! all the same, and Windows shows them with that note. `beaver` never removes the key: the
//! README's uninstall steps do (`reg delete`).
//!
//! The event ids and types are nats-server's: 1 information (notice and warnings, which are
//! warning events here), 2 error, 3 debug, 4 trace.
//!
//! This module calls the Win32 API (`windows-sys`); each call's safety condition is written
//! where it is made.

use log::Level;
use std::fmt;
use windows_sys::Win32::Foundation::{ERROR_SUCCESS, HANDLE};
use windows_sys::Win32::System::EventLog::{
    DeregisterEventSource, RegisterEventSourceW, ReportEventW, EVENTLOG_ERROR_TYPE,
    EVENTLOG_INFORMATION_TYPE, EVENTLOG_WARNING_TYPE, REPORT_EVENT_TYPE,
};
use windows_sys::Win32::System::Registry::{
    RegCloseKey, RegCreateKeyExW, RegSetValueExW, HKEY, HKEY_LOCAL_MACHINE, KEY_SET_VALUE,
    REG_CREATED_NEW_KEY, REG_DWORD, REG_EXPAND_SZ, REG_OPTION_NON_VOLATILE,
};

/// NUL-terminated UTF-16.
fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// An event source handle: what `logging`'s `Sink::EventLog` holds.
pub(super) struct EventLog {
    handle: HANDLE,
}

// SAFETY: an event source handle may be used from any thread (ReportEvent is thread-safe,
// Microsoft's documentation of the function); it is only deregistered in `drop`.
unsafe impl Send for EventLog {}
// SAFETY: as above; `log` only passes the handle to ReportEventW.
unsafe impl Sync for EventLog {}

impl EventLog {
    /// Opens the event source `source` on this machine (`host: None`, registering it first,
    /// see the module docs) or on `host` (`remote_syslog`, not registered: that is the
    /// remote machine's business, as nats-server leaves it).
    pub(super) fn open(source: &str, host: Option<&str>) -> Result<EventLog, String> {
        if host.is_none() {
            register(source);
        }
        let name = wide(source);
        let host_w = host.map(wide);
        let host_ptr = host_w.as_ref().map_or(std::ptr::null(), |h| h.as_ptr());
        // SAFETY: both strings are NUL-terminated UTF-16 that outlive the call (a null
        // server name is the local machine).
        let handle = unsafe { RegisterEventSourceW(host_ptr, name.as_ptr()) };
        if handle.is_null() {
            return Err(format!(
                "could not open event log: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(EventLog { handle })
    }

    /// Writes one event for a line at `level`; false if Windows refused it.
    pub(super) fn log(&self, level: Level, args: &fmt::Arguments) -> bool {
        let (kind, id, tag): (REPORT_EVENT_TYPE, u32, &str) = match level {
            Level::Error => (EVENTLOG_ERROR_TYPE, 2, "ERROR"),
            Level::Warn => (EVENTLOG_WARNING_TYPE, 1, "WARN"),
            Level::Info => (EVENTLOG_INFORMATION_TYPE, 1, "NOTICE"),
            Level::Debug => (EVENTLOG_INFORMATION_TYPE, 3, "DEBUG"),
            Level::Trace => (EVENTLOG_INFORMATION_TYPE, 4, "TRACE"),
        };
        let text = wide(&format!("pid[{}][{tag}]: {args}", std::process::id()));
        let strings = [text.as_ptr()];
        // SAFETY: `self.handle` is a registered event source; `strings` holds one pointer to
        // a NUL-terminated UTF-16 string, both alive for the call; no user SID, no raw data.
        unsafe {
            ReportEventW(
                self.handle,
                kind,
                0,
                id,
                std::ptr::null_mut(),
                1,
                0,
                strings.as_ptr(),
                std::ptr::null(),
            ) != 0
        }
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        // SAFETY: the handle came from RegisterEventSourceW and is deregistered once.
        unsafe { DeregisterEventSource(self.handle) };
    }
}

/// Registers `source` with EventCreate.exe's message table, if its key does not exist yet
/// and this process may create it. Failure is not an error (see the module docs).
fn register(source: &str) {
    let path = wide(&format!(
        "SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\{source}"
    ));
    let mut key: HKEY = std::ptr::null_mut();
    let mut disposition = 0u32;
    // SAFETY: `path` is NUL-terminated UTF-16 alive for the call; `key` and `disposition`
    // are valid places for the results; no class, default security.
    let r = unsafe {
        RegCreateKeyExW(
            HKEY_LOCAL_MACHINE,
            path.as_ptr(),
            0,
            std::ptr::null(),
            REG_OPTION_NON_VOLATILE,
            KEY_SET_VALUE,
            std::ptr::null(),
            &mut key,
            &mut disposition,
        )
    };
    if r != ERROR_SUCCESS {
        return;
    }
    if disposition == REG_CREATED_NEW_KEY {
        let file = wide("%SystemRoot%\\System32\\EventCreate.exe");
        let types: u32 = u32::from(EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE)
            | u32::from(EVENTLOG_INFORMATION_TYPE);
        let custom: u32 = 1;
        let (file_name, types_name) = (wide("EventMessageFile"), wide("TypesSupported"));
        let custom_name = wide("CustomSource");
        // SAFETY: `key` is open with KEY_SET_VALUE; names are NUL-terminated UTF-16; each
        // data pointer covers the byte count given (the string with its NUL, one DWORD).
        unsafe {
            RegSetValueExW(
                key,
                custom_name.as_ptr(),
                0,
                REG_DWORD,
                (&custom as *const u32).cast(),
                4,
            );
            RegSetValueExW(
                key,
                file_name.as_ptr(),
                0,
                REG_EXPAND_SZ,
                file.as_ptr().cast(),
                (file.len() * 2) as u32,
            );
            RegSetValueExW(
                key,
                types_name.as_ptr(),
                0,
                REG_DWORD,
                (&types as *const u32).cast(),
                4,
            );
        }
    }
    // SAFETY: `key` was opened above and is closed once.
    unsafe { RegCloseKey(key) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under Wine the event log only reaches Wine's debug channel, so this shows what can
    /// be shown there: the source opens (and registers) and events of every level are
    /// accepted without error. (Run as an administrator on Windows, it leaves the source
    /// `beaver-test` registered: `reg delete` it as the README says for `beaver`.)
    #[test]
    fn the_source_opens_and_takes_every_level() {
        let log = EventLog::open("beaver-test", None).unwrap();
        for level in [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace,
        ] {
            assert!(log.log(level, &format_args!("a {level} line")), "{level}");
        }
    }
}
