//! The trie against a reference: the longest entry whose components are a
//! prefix of the query's components, found by scanning every entry.
#![no_main]

use interpose::policy::trie::{components, Trie};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Lines: every line but the last is an entry, the last is the query.
    let mut lines: Vec<&[u8]> = data.split(|&c| c == b'\n').collect();
    let Some(query) = lines.pop() else { return };
    let mut trie = Trie::new();
    for (i, entry) in lines.iter().enumerate() {
        trie.insert(entry, i as u32);
    }
    let q: Vec<&[u8]> = components(query).collect();
    let reference = lines
        .iter()
        .enumerate()
        .filter(|(_, e)| q.starts_with(&components(e).collect::<Vec<_>>()))
        // Longest prefix wins; among equal entries the last inserted.
        .max_by_key(|(i, e)| (components(e).count(), *i))
        .map(|(i, _)| i as u32);
    // Equal paths replace each other, so compare the entry's path, not the index.
    let canon = |i: u32| components(lines[i as usize]).collect::<Vec<_>>();
    assert_eq!(trie.lookup(query).map(canon), reference.map(canon));
    let reaches = lines.iter().any(|e| components(e).collect::<Vec<_>>().starts_with(&q)) || q.is_empty();
    assert_eq!(trie.reaches(query), reaches);
});
