//! Users and groups by name or number (`--user`, `--group`) and the names shown in the
//! per-owner report, from the system's passwd and group databases (NSS). Reads only.

use std::ffi::{CStr, CString};

/// A `--user` or `--group` value that is neither a name the system knows nor a number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownOwner {
    #[error("'{0}' is not a user name or number on this system")]
    User(String),
    #[error("'{0}' is not a group name or number on this system")]
    Group(String),
}

/// `NAME` or a number: the uid. A name that is also a number is taken as the name, as find does.
pub fn parse_user(s: &str) -> Result<u32, UnknownOwner> {
    if let Some(uid) = lookup(s, Db::User) {
        return Ok(uid);
    }
    s.parse::<u32>()
        .map_err(|_| UnknownOwner::User(s.to_string()))
}

/// `NAME` or a number: the gid.
pub fn parse_group(s: &str) -> Result<u32, UnknownOwner> {
    if let Some(gid) = lookup(s, Db::Group) {
        return Ok(gid);
    }
    s.parse::<u32>()
        .map_err(|_| UnknownOwner::Group(s.to_string()))
}

/// The user name of `uid`, if the passwd database has one.
pub fn user_name(uid: u32) -> Option<String> {
    with_buffer(|buf| {
        // SAFETY: getpwuid_r writes into `pw` and `buf`, both alive and of the given sizes;
        // `result` is null or points to `pw`, whose strings point into `buf`.
        unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut result);
            let name = (!result.is_null() && !pw.pw_name.is_null())
                .then(|| CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned());
            (rc, name)
        }
    })
}

enum Db {
    User,
    Group,
}

fn lookup(name: &str, db: Db) -> Option<u32> {
    let c = CString::new(name).ok()?;
    with_buffer(|buf| match db {
        // SAFETY: getpwnam_r writes into `pw` and `buf`, both alive and of the given sizes;
        // `result` is null or points to `pw`.
        Db::User => unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwnam_r(
                c.as_ptr(),
                &mut pw,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            );
            (rc, (!result.is_null()).then_some(pw.pw_uid))
        },
        // SAFETY: as above, for getgrnam_r and `gr`.
        Db::Group => unsafe {
            let mut gr: libc::group = std::mem::zeroed();
            let mut result: *mut libc::group = std::ptr::null_mut();
            let rc = libc::getgrnam_r(
                c.as_ptr(),
                &mut gr,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            );
            (rc, (!result.is_null()).then_some(gr.gr_gid))
        },
    })
}

/// Runs a `get*_r` call with a buffer, growing it while the call says ERANGE.
fn with_buffer<T>(mut call: impl FnMut(&mut [libc::c_char]) -> (i32, Option<T>)) -> Option<T> {
    let mut buf: Vec<libc::c_char> = vec![0; 4096];
    loop {
        let (rc, found) = call(&mut buf);
        if rc == libc::ERANGE && buf.len() < (1 << 20) {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        return if rc == 0 { found } else { None };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_by_name_and_number() {
        assert_eq!(parse_user("root"), Ok(0));
        assert_eq!(parse_user("0"), Ok(0));
        assert_eq!(parse_user("4242"), Ok(4242));
        assert!(parse_user("no such user, surely").is_err());
        assert_eq!(
            parse_group("no such group, surely")
                .unwrap_err()
                .to_string(),
            "'no such group, surely' is not a group name or number on this system"
        );
        assert_eq!(parse_group("0"), Ok(0));
        assert_eq!(user_name(0).as_deref(), Some("root"));
    }
}
