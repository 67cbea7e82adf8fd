//! POSIX ACLs against a read-only mount that cannot show them (squashfs has no
//! `system.posix_acl_*`): the mode bits the image may hold so that nobody reads more through
//! the mount than the ACL let them read. The exact ACL travels in the manifest and `unpack`
//! restores it. Owns the parsing of the ACL xattr's value; never writes anything.

/// The xattr name of a file's access ACL.
pub const ACCESS: &str = "system.posix_acl_access";

const USER_OBJ: u16 = 0x01;
const USER: u16 = 0x02;
const GROUP_OBJ: u16 = 0x04;
const GROUP: u16 = 0x08;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;

/// The mode bits for the image of a file whose access ACL is `acl` (the xattr's raw value)
/// and mode `mode`: the owner keeps its bits; the group and others get at most what every
/// named user or group of the ACL gets (on the mount, a named user is just "group" or
/// "other"). `None` if the value cannot be parsed (then the caller keeps it out entirely).
pub fn image_mode(mode: u32, acl: &[u8]) -> Option<u32> {
    if acl.len() < 4 || !(acl.len() - 4).is_multiple_of(8) || acl[..4] != 2u32.to_le_bytes() {
        return None;
    }
    let (mut group_obj, mut other, mut mask) = (None, None, 7u32);
    let mut named = 7u32;
    for e in acl[4..].chunks_exact(8) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let perm = u32::from(u16::from_le_bytes([e[2], e[3]]) & 7);
        match tag {
            USER_OBJ => {}
            USER | GROUP => named &= perm,
            GROUP_OBJ => group_obj = Some(perm),
            MASK => mask = perm,
            OTHER => other = Some(perm),
            _ => return None,
        }
    }
    let named = named & mask;
    let group = group_obj? & mask & named;
    let other = other? & named;
    Some((mode & 0o7700) | (group << 3) | other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut v = 2u32.to_le_bytes().to_vec();
        for (t, p, id) in entries {
            v.extend_from_slice(&t.to_le_bytes());
            v.extend_from_slice(&p.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    #[test]
    fn a_named_user_denied_is_denied_through_the_mount() {
        // u::rw-, u:bob:---, g::r--, m::r--, o::r--: bob reads nothing; on the mount he is
        // "other", so other loses r.
        let a = acl(&[
            (USER_OBJ, 6, 0),
            (USER, 0, 1000),
            (GROUP_OBJ, 4, 0),
            (MASK, 4, 0),
            (OTHER, 4, 0),
        ]);
        assert_eq!(image_mode(0o644, &a), Some(0o600));
    }

    #[test]
    fn a_grant_through_the_acl_is_not_widened() {
        // u::rw-, u:bob:rw-, g::r--, m::rw-, o::---: mode 0660 (group bits are the mask);
        // the owning group only had r.
        let a = acl(&[
            (USER_OBJ, 6, 0),
            (USER, 6, 1000),
            (GROUP_OBJ, 4, 0),
            (MASK, 6, 0),
            (OTHER, 0, 0),
        ]);
        assert_eq!(image_mode(0o4660, &a), Some(0o4640));
    }

    #[test]
    fn damaged_values_are_refused() {
        assert_eq!(image_mode(0o644, b"xx"), None);
        assert_eq!(image_mode(0o644, &acl(&[(0x40, 7, 0)])), None);
    }
}
