//! The zip container of a bundle, read from memory with every limit checked before anything is
//! inflated or written: the central directory (no zip64, no encryption; stored or deflated
//! entries), each name confined to the bundle's directory (no `..`, no absolute path, no
//! drive, no backslash), no links, no duplicates, caps on entries, sizes and compression
//! ratio; each entry inflated (miniz_oxide) to exactly its stated size and checked against its
//! CRC-32. The signature block a signed bundle carries after the zip is split off first.

use std::collections::BTreeSet;

/// What a bundle may hold at most.
pub(crate) const MAX_ENTRIES: usize = 50_000;
/// The most its files may add up to, unpacked.
pub(crate) const MAX_UNPACKED: u64 = 1 << 30;
/// The most one entry may be inflated beyond its compressed size (a zip bomb's is thousands).
const MAX_RATIO: u64 = 200;

const EOCD: u32 = 0x0605_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;

/// The signature block's markers (`mcpb sign`): `MCPB_SIG_V1`, a little-endian u32 length,
/// that many bytes of DER PKCS#7 (detached, over the zip before it), `MCPB_SIG_END`.
const SIG_START: &[u8] = b"MCPB_SIG_V1";
const SIG_END: &[u8] = b"MCPB_SIG_END";

/// One file of the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its path inside the bundle, `/`-separated, checked.
    pub path: String,
    /// Whether it is executable (any of the owner's, group's or others' x bits).
    pub executable: bool,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local: u64,
}

/// A read zip: its entries (files only; directories are implied by their paths).
#[derive(Debug)]
pub(crate) struct Archive<'a> {
    bytes: &'a [u8],
    pub entries: Vec<Entry>,
}

/// The zip bytes, and the signature block's PKCS#7 when the bundle is signed.
pub(crate) fn split_signature(file: &[u8]) -> Result<(&[u8], Option<&[u8]>), String> {
    if !file.ends_with(SIG_END) {
        return Ok((file, None));
    }
    let body = &file[..file.len() - SIG_END.len()];
    let start = find_last(body, SIG_START)
        .ok_or("the bundle ends with a signature block's end but has no start")?;
    let after = start + SIG_START.len();
    let length = u32_at(body, after).map_err(|_| "the signature block is cut short")? as usize;
    if after.checked_add(4).and_then(|a| a.checked_add(length)) != Some(body.len()) {
        return Err("the signature block's length does not match its contents".into());
    }
    Ok((&file[..start], Some(&body[after + 4..])))
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    (0..=haystack.len().checked_sub(needle.len())?)
        .rev()
        .find(|&i| haystack[i..].starts_with(needle))
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at.saturating_add(2))
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| "the zip is cut short".to_owned())
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at.saturating_add(4))
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| "the zip is cut short".to_owned())
}

/// A checked entry path: relative, `/`-separated, each part a plain name on every system the
/// bundle may be unpacked on (no `.`/`..`/empty part, no drive or stream `:`, no backslash, no
/// NUL or other control character, no Windows device name, no part ending in a dot or a space).
fn confined(raw: &[u8]) -> Result<String, String> {
    let name = std::str::from_utf8(raw).map_err(|_| "an entry's name is not UTF-8".to_owned())?;
    let shown = name.escape_debug().to_string();
    let bad = |why: &str| Err(format!("the entry \"{shown}\" {why}"));
    if name.starts_with('/') || name.contains('\\') {
        return bad("is not a relative path inside the bundle");
    }
    if name.chars().any(char::is_control) {
        return bad("has a control character in its name");
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    if trimmed.is_empty() || trimmed.split('/').any(|p| matches!(p, "" | "." | "..")) {
        return bad("leaves the bundle's directory (or has an empty, . or .. part)");
    }
    for part in trimmed.split('/') {
        if part.contains(':') {
            return bad("names a drive or a stream");
        }
        if part.ends_with(['.', ' ']) {
            return bad("has a part ending in a dot or a space");
        }
        let stem = part.split('.').next().unwrap_or(part).to_ascii_uppercase();
        let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
            || ((stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.len() == 4
                && stem.ends_with(|c: char| c.is_ascii_digit()));
        if device {
            return bad("names a Windows device");
        }
    }
    Ok(name.to_owned())
}

impl<'a> Archive<'a> {
    /// Reads the central directory of `bytes` (the zip, its signature block split off).
    pub(crate) fn read(bytes: &'a [u8]) -> Result<Archive<'a>, String> {
        // The end record: within the last 64 KiB and 22 bytes (its comment's most). A signed
        // bundle's record may count the signature block as its comment (then it ends before
        // the file does), so the first record found from the end is taken.
        let lowest = bytes.len().saturating_sub(22 + 0xFFFF + 64 * 1024);
        let end = (lowest..=bytes.len().saturating_sub(22))
            .rev()
            .find(|&i| u32_at(bytes, i).ok() == Some(EOCD))
            .ok_or("not a zip file (no end of central directory)")?;
        let disk = u16_at(bytes, end + 4)?;
        let count = u16_at(bytes, end + 10)? as usize;
        let size = u32_at(bytes, end + 12)? as usize;
        let offset = u32_at(bytes, end + 16)? as usize;
        if disk != 0 || offset == 0xFFFF_FFFF || count == 0xFFFF {
            return Err("a multi-disk or zip64 archive (a bundle is neither)".into());
        }
        if count > MAX_ENTRIES {
            return Err(format!("{count} entries (at most {MAX_ENTRIES})"));
        }
        if offset.checked_add(size).is_none_or(|e| e > end) {
            return Err("the central directory lies outside the file".into());
        }
        let mut entries = Vec::with_capacity(count);
        let mut seen = BTreeSet::new();
        let mut total: u64 = 0;
        let mut at = offset;
        for _ in 0..count {
            if u32_at(bytes, at)? != CENTRAL {
                return Err("a broken central directory".into());
            }
            let made_by = u16_at(bytes, at + 4)? >> 8;
            let flags = u16_at(bytes, at + 8)?;
            let method = u16_at(bytes, at + 10)?;
            let crc = u32_at(bytes, at + 16)?;
            let compressed = u32_at(bytes, at + 20)? as u64;
            let unpacked = u32_at(bytes, at + 24)? as u64;
            let name_len = u16_at(bytes, at + 28)? as usize;
            let extra_len = u16_at(bytes, at + 30)? as usize;
            let comment_len = u16_at(bytes, at + 32)? as usize;
            let external = u32_at(bytes, at + 38)?;
            let local = u32_at(bytes, at + 42)? as u64;
            let raw = bytes
                .get(at + 46..at + 46 + name_len)
                .ok_or("the zip is cut short")?;
            at += 46 + name_len + extra_len + comment_len;
            let path = confined(raw)?;
            if flags & 1 != 0 {
                return Err(format!("the entry {path:?} is encrypted"));
            }
            if compressed == 0xFFFF_FFFF || unpacked == 0xFFFF_FFFF || local == 0xFFFF_FFFF {
                return Err(format!("the entry {path:?} is zip64 (a bundle's never is)"));
            }
            // The Unix mode, where the archive was made on Unix (made-by 3): a link is refused
            // (it could point anywhere); a directory is implied by the files in it.
            let mode = if made_by == 3 { external >> 16 } else { 0 };
            let kind = mode & 0o170_000;
            if kind == 0o120_000 {
                return Err(format!("the entry {path:?} is a symbolic link"));
            }
            if path.ends_with('/') || kind == 0o040_000 || (external & 0x10 != 0 && made_by != 3) {
                continue;
            }
            if kind != 0 && kind != 0o100_000 {
                return Err(format!("the entry {path:?} is not a regular file"));
            }
            if !matches!(method, 0 | 8) {
                return Err(format!(
                    "the entry {path:?} uses compression method {method} (only stored and deflated)"
                ));
            }
            if method == 0 && compressed != unpacked {
                return Err(format!("the stored entry {path:?} has two sizes"));
            }
            if unpacked > compressed.max(1).saturating_mul(MAX_RATIO) && unpacked > 1 << 20 {
                return Err(format!(
                    "the entry {path:?} would inflate {unpacked} bytes from {compressed} \
                     (more than {MAX_RATIO} times)"
                ));
            }
            total = total.saturating_add(unpacked);
            if total > MAX_UNPACKED {
                return Err(format!("more than {MAX_UNPACKED} bytes unpacked"));
            }
            // Two entries for one file (or for names a case-insensitive file system takes
            // as one): which would win is the unpacker's accident.
            if !seen.insert(path.to_lowercase()) {
                return Err(format!("the entry {path:?} is in the bundle twice"));
            }
            entries.push(Entry {
                path,
                executable: mode & 0o111 != 0,
                method,
                crc,
                compressed,
                size: unpacked,
                local,
            });
        }
        Ok(Archive { bytes, entries })
    }

    /// The contents of `entry`: inflated to exactly its size, its CRC-32 checked.
    pub(crate) fn contents(&self, entry: &Entry) -> Result<Vec<u8>, String> {
        let at = entry.local as usize;
        if u32_at(self.bytes, at)? != LOCAL {
            return Err(format!("the entry {:?} has no local header", entry.path));
        }
        let name_len = u16_at(self.bytes, at + 26)? as usize;
        let extra_len = u16_at(self.bytes, at + 28)? as usize;
        let data = (at.checked_add(30 + name_len + extra_len))
            .and_then(|start| Some((start, start.checked_add(entry.compressed as usize)?)))
            .and_then(|(start, end)| self.bytes.get(start..end))
            .ok_or_else(|| format!("the entry {:?} is cut short", entry.path))?;
        let out = if entry.method == 0 {
            data.to_vec()
        } else {
            miniz_oxide::inflate::decompress_to_vec_with_limit(data, entry.size as usize).map_err(
                |e| {
                    format!(
                        "the entry {:?} does not inflate ({:?})",
                        entry.path, e.status
                    )
                },
            )?
        };
        if out.len() as u64 != entry.size {
            return Err(format!(
                "the entry {:?} is {} bytes, not the {} its header says",
                entry.path,
                out.len(),
                entry.size
            ));
        }
        if crc32(&out) != entry.crc {
            return Err(format!("the entry {:?} fails its CRC-32", entry.path));
        }
        Ok(out)
    }

    /// The entry at `path`.
    pub(crate) fn find(&self, path: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.path == path)
    }
}

/// The zip's CRC-32 (IEEE 802.3, reflected): a checksum of each entry against damage, not a
/// check against tampering (the bundle's SHA-256 is that).
fn crc32(bytes: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table = [0u32; 256];
        for (i, slot) in table.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        table
    });
    !bytes.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zip of stored entries `(name, contents, unix mode)`, as a packer writes one.
    pub(crate) fn zip(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for (name, data, mode) in entries {
            let offset = out.len() as u32;
            let crc = crc32(data);
            let mut local = Vec::new();
            local.extend(LOCAL.to_le_bytes());
            local.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            local.extend(crc.to_le_bytes());
            local.extend((data.len() as u32).to_le_bytes());
            local.extend((data.len() as u32).to_le_bytes());
            local.extend((name.len() as u16).to_le_bytes());
            local.extend([0, 0]);
            local.extend(name.as_bytes());
            out.extend(&local);
            out.extend(*data);
            central.extend(CENTRAL.to_le_bytes());
            central.extend([20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            central.extend(crc.to_le_bytes());
            central.extend((data.len() as u32).to_le_bytes());
            central.extend((data.len() as u32).to_le_bytes());
            central.extend((name.len() as u16).to_le_bytes());
            central.extend([0, 0, 0, 0, 0, 0, 0, 0]);
            central.extend((mode << 16).to_le_bytes());
            central.extend(offset.to_le_bytes());
            central.extend(name.as_bytes());
        }
        let at = out.len() as u32;
        out.extend(&central);
        out.extend(EOCD.to_le_bytes());
        out.extend([0, 0, 0, 0]);
        out.extend((entries.len() as u16).to_le_bytes());
        out.extend((entries.len() as u16).to_le_bytes());
        out.extend((central.len() as u32).to_le_bytes());
        out.extend(at.to_le_bytes());
        out.extend([0, 0]);
        out
    }

    #[test]
    fn crc32_is_the_zip_one() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn entries_are_read_with_their_mode_and_checked() {
        let bytes = zip(&[
            ("manifest.json", b"{}", 0o100_644),
            ("server/run", b"#!/bin/sh\n", 0o100_755),
            ("server/", b"", 0o040_755),
        ]);
        let archive = Archive::read(&bytes).unwrap();
        let paths: Vec<(&str, bool)> = (archive.entries.iter())
            .map(|e| (e.path.as_str(), e.executable))
            .collect();
        assert_eq!(paths, [("manifest.json", false), ("server/run", true)]);
        let run = archive.find("server/run").unwrap();
        assert_eq!(archive.contents(run).unwrap(), b"#!/bin/sh\n");

        // A changed byte fails the entry's CRC-32.
        let mut changed = bytes.clone();
        let at = changed.windows(9).position(|w| w == b"#!/bin/sh").unwrap();
        changed[at] = b'X';
        let archive = Archive::read(&changed).unwrap();
        let run = archive.find("server/run").unwrap();
        assert!(archive.contents(run).unwrap_err().contains("CRC-32"));
    }

    #[test]
    fn names_that_leave_the_directory_links_and_duplicates_are_refused() {
        for (name, mode, why) in [
            ("../evil", 0o100_644, "leaves"),
            ("a/../../evil", 0o100_644, "leaves"),
            ("/etc/passwd", 0o100_644, "relative"),
            ("a\\..\\evil", 0o100_644, "relative"),
            ("C:/evil", 0o100_644, "drive"),
            ("link", 0o120_777, "symbolic link"),
            ("fifo", 0o010_644, "regular file"),
        ] {
            let bytes = zip(&[("ok", b"x", 0o100_644), (name, b"x", mode)]);
            let e = Archive::read(&bytes).unwrap_err();
            assert!(e.contains(why), "{name}: {e}");
        }
        let twice = zip(&[("A.txt", b"x", 0o100_644), ("a.txt", b"y", 0o100_644)]);
        assert!(Archive::read(&twice).unwrap_err().contains("twice"));
        assert!(Archive::read(b"not a zip").is_err());
        assert!(Archive::read(&[]).is_err());
    }

    #[test]
    fn a_signature_block_is_split_off() {
        let bytes = zip(&[("manifest.json", b"{}", 0o100_644)]);
        assert_eq!(split_signature(&bytes).unwrap(), (&bytes[..], None));
        let mut signed = bytes.clone();
        signed.extend(SIG_START);
        signed.extend(3u32.to_le_bytes());
        signed.extend([0x30, 0x01, 0x00]);
        signed.extend(SIG_END);
        let (zip_part, signature) = split_signature(&signed).unwrap();
        assert_eq!(zip_part, &bytes[..]);
        assert_eq!(signature, Some(&[0x30, 0x01, 0x00][..]));
        Archive::read(zip_part).unwrap();
        let mut bad = signed.clone();
        let at = bytes.len() + SIG_START.len();
        bad[at] = 9;
        assert!(split_signature(&bad).is_err());
    }

    #[test]
    fn a_deflated_entry_inflates_to_its_size_and_no_further() {
        let text = b"hello hello hello hello hello hello".repeat(10);
        let packed = miniz_oxide::deflate::compress_to_vec(&text, 9);
        let mut bytes = zip(&[("a.txt", &packed, 0o100_644)]);
        // Make it a deflated entry of the text's size and CRC.
        let set = |bytes: &mut Vec<u8>, sig: u32, method_at: usize| {
            let at = bytes
                .windows(4)
                .position(|w| w == sig.to_le_bytes())
                .unwrap();
            bytes[at + method_at] = 8;
            let crc_at = if sig == LOCAL { at + 14 } else { at + 16 };
            bytes[crc_at..crc_at + 4].copy_from_slice(&crc32(&text).to_le_bytes());
            let size_at = crc_at + 8;
            bytes[size_at..size_at + 4].copy_from_slice(&(text.len() as u32).to_le_bytes());
        };
        set(&mut bytes, LOCAL, 8);
        set(&mut bytes, CENTRAL, 10);
        let archive = Archive::read(&bytes).unwrap();
        assert_eq!(archive.contents(&archive.entries[0]).unwrap(), text);
    }
}
