//! `split_last` against a reference built from the path's components: the
//! directory part joined with the name gives the path back (without trailing
//! slashes), and the name is the last component unless that is `.`/`..`.
#![no_main]

use interpose::supervisor::resolve::split_last;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|path: &[u8]| {
    let last = path.split(|&c| c == b'/').filter(|c| !c.is_empty()).last();
    match split_last(path) {
        Some((dir, name)) => {
            assert_eq!(Some(name), last);
            assert!(name != b"." && name != b".." && !name.contains(&b'/'));
            let mut joined = dir.to_vec();
            joined.extend_from_slice(name);
            let trimmed = path.iter().rposition(|&c| c != b'/').map_or(&path[..0], |i| &path[..=i]);
            assert_eq!(joined, trimmed);
        }
        None => assert!(last.is_none() || last == Some(b".") || last == Some(b"..")),
    }
});
