//! Why a command did not start, said so that the user can act on it: the
//! path as given and as resolved, the rule that decided, and the flag (or
//! policy line) that would allow it. A bare "Permission denied" names none
//! of these, and a program outside the surface is the most common first
//! stumble (a toolchain in the home directory, a native installer's
//! symlink into a versions directory).

use crate::policy::{Access, NoProcesses, Surface};
use crate::supervisor::ExecRefusal;
use crate::sys::Errno;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One line per refused exec: what, why, and what would allow it.
pub fn refusal(r: &ExecRefusal) -> String {
    let path = text(&r.path);
    let resolved = r.resolved.as_deref().map(text).filter(|p| *p != path);
    let what = match resolved {
        Some(res) => format!("{path} (resolved to {res})"),
        None => path,
    };
    let errno = r.errno.map_or_else(String::new, |e| format!(" ({})", std::io::Error::from(e)));
    match &r.remedy {
        Some(remedy) => format!("exec of {what} refused{errno}: {}; allowed by {remedy}", r.rule),
        None => format!("exec of {what} failed{errno}: {}", r.rule),
    }
}

/// Why `program` could not be executed with `errno`: the supervisor's
/// refusals if it refused, else what the kernel refused after it (a missing
/// interpreter, or one outside the surface, which Landlock stops).
pub fn start_failure(program: &Path, errno: Errno, refusals: &[ExecRefusal], surface: &Surface) -> Vec<String> {
    if !refusals.is_empty() {
        return refusals.iter().map(refusal).collect();
    }
    let base = format!("cannot execute {}: {}", program.display(), std::io::Error::from(errno));
    let Some(interpreter) = interpreter(program) else { return vec![base] };
    let Ok(canonical) = std::fs::canonicalize(&interpreter) else {
        return vec![format!("{base}: its interpreter {} does not exist", interpreter.display())];
    };
    let verdict = surface.decide(canonical.as_os_str().as_bytes(), Access::Exec, &NoProcesses);
    if verdict.allowed {
        return vec![base];
    }
    let shown = if canonical == interpreter {
        interpreter.display().to_string()
    } else {
        format!("{} (resolved to {})", interpreter.display(), canonical.display())
    };
    vec![format!(
        "{base}: its interpreter {shown} is outside the surface: {}; allowed by {}",
        surface.describe(verdict.reason),
        surface.remedy(&canonical, Access::Exec, verdict.reason)
    )]
}

/// The interpreter the kernel runs for `program`: the `#!` line's, or the
/// ELF program interpreter (`PT_INTERP`, the dynamic loader).
fn interpreter(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let mut f = std::fs::File::open(program).ok()?;
    let n = f.read(&mut head).ok()?;
    let head = &head[..n];
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&c| c == b'\n').next()?;
        let word = line.split(|c| c.is_ascii_whitespace()).find(|w| !w.is_empty())?;
        return Some(PathBuf::from(std::ffi::OsStr::from_bytes(word)));
    }
    elf_interpreter(&std::fs::read(program).ok()?)
}

/// `PT_INTERP` of a 64-bit little-endian ELF file.
fn elf_interpreter(elf: &[u8]) -> Option<PathBuf> {
    const PT_INTERP: u32 = 3;
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?) as usize);
    if elf.get(..5)? != b"\x7fELF\x02" || elf.get(5) != Some(&1) {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(0x20)?, usize::from(u16_at(0x36)?), usize::from(u16_at(0x38)?));
    (0..phnum).find_map(|i| {
        let ph = phoff.checked_add(i.checked_mul(phentsize)?)?;
        if u32_at(ph)? != PT_INTERP {
            return None;
        }
        let (offset, size) = (u64_at(ph + 0x08)?, u64_at(ph + 0x20)?);
        let bytes = elf.get(offset..offset.checked_add(size)?)?;
        let bytes = bytes.split(|&c| c == 0).next()?;
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_of_scripts_and_elf_files() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/usr/bin/python9 -u\nprint(1)\n").unwrap();
        assert_eq!(interpreter(&script), Some(PathBuf::from("/usr/bin/python9")));
        std::fs::write(&script, "#!  /bin/sh\n").unwrap();
        assert_eq!(interpreter(&script), Some(PathBuf::from("/bin/sh")));
        // A dynamically linked program names the loader.
        let loader = interpreter(Path::new("/bin/sh")).expect("/bin/sh is dynamically linked");
        assert!(loader.to_string_lossy().contains("ld-linux"), "{}", loader.display());
        assert_eq!(elf_interpreter(b"\x7fELF\x02\x01"), None);
        assert_eq!(elf_interpreter(b"not an elf file at all"), None);
    }
}
