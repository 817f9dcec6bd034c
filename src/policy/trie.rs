//! A path-component prefix trie: the longest entry that is a prefix of a
//! path, compared component by component, decides it.

/// Index of a node in [`Trie::nodes`].
type NodeId = u32;

#[derive(Debug, Default, Clone)]
struct Node {
    /// Children sorted by name, searched with binary search.
    children: Vec<(Box<[u8]>, NodeId)>,
    /// The value of an entry that ends at this node.
    value: Option<u32>,
}

/// Maps absolute paths to `u32` values (rule indices) by longest prefix.
///
/// `/a/b` is a prefix of `/a/b` and `/a/b/c`, never of `/a/bc`. Lookups do not
/// allocate.
#[derive(Debug, Clone)]
pub struct Trie {
    nodes: Vec<Node>,
}

impl Default for Trie {
    fn default() -> Self {
        Self { nodes: vec![Node::default()] }
    }
}

/// The non-empty components of a `/`-separated path; `.` is skipped.
///
/// Paths given to the trie are canonical, so `..` never appears; if it does it
/// is kept as a name, which matches no entry and so cannot widen access.
pub fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".")
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the value of the entry for `path`, replacing an earlier one.
    pub fn insert(&mut self, path: &[u8], value: u32) {
        let mut at: NodeId = 0;
        for name in components(path) {
            at = match self.nodes[at as usize].children.binary_search_by(|(n, _)| (**n).cmp(name)) {
                Ok(i) => self.nodes[at as usize].children[i].1,
                Err(i) => {
                    let id = self.nodes.len() as NodeId;
                    self.nodes.push(Node::default());
                    self.nodes[at as usize].children.insert(i, (name.into(), id));
                    id
                }
            };
        }
        self.nodes[at as usize].value = Some(value);
    }

    /// Heap bytes the trie holds (nodes, child tables and names), for the
    /// memory-per-entry figure of `interpose bench`.
    pub fn heap_bytes(&self) -> usize {
        let child = std::mem::size_of::<(Box<[u8]>, NodeId)>();
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self
                .nodes
                .iter()
                .map(|n| n.children.capacity() * child + n.children.iter().map(|(name, _)| name.len()).sum::<usize>())
                .sum::<usize>()
    }

    /// The value of the longest entry that is a prefix of `path`.
    pub fn lookup(&self, path: &[u8]) -> Option<u32> {
        let mut node = &self.nodes[0];
        let mut best = node.value;
        for name in components(path) {
            match node.children.binary_search_by(|(n, _)| (**n).cmp(name)) {
                Ok(i) => {
                    node = &self.nodes[node.children[i].1 as usize];
                    if node.value.is_some() {
                        best = node.value;
                    }
                }
                Err(_) => break,
            }
        }
        best
    }

    /// Whether `path` is an entry or lies on the way to one (every component
    /// is a node of the trie).
    pub fn reaches(&self, path: &[u8]) -> bool {
        let mut node = &self.nodes[0];
        for name in components(path) {
            match node.children.binary_search_by(|(n, _)| (**n).cmp(name)) {
                Ok(i) => node = &self.nodes[node.children[i].1 as usize],
                Err(_) => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trie(entries: &[(&str, u32)]) -> Trie {
        let mut t = Trie::new();
        for (p, v) in entries {
            t.insert(p.as_bytes(), *v);
        }
        t
    }

    #[test]
    fn longest_prefix_wins_by_component() {
        let t = trie(&[("/usr", 1), ("/usr/lib/secret", 2), ("/home/u/repo", 3)]);
        assert_eq!(t.lookup(b"/usr"), Some(1));
        assert_eq!(t.lookup(b"/usr/bin/ls"), Some(1));
        assert_eq!(t.lookup(b"/usr/lib/secret"), Some(2));
        assert_eq!(t.lookup(b"/usr/lib/secret/x"), Some(2));
        assert_eq!(t.lookup(b"/usr/lib/secretive"), Some(1));
        assert_eq!(t.lookup(b"/usrx"), None);
        assert_eq!(t.lookup(b"/home/u"), None);
        assert_eq!(t.lookup(b"/home/u/repo2"), None);
        assert_eq!(t.lookup(b"/home/u/repo/src/main.rs"), Some(3));
        assert_eq!(t.lookup(b"/"), None);
        assert_eq!(t.lookup(b""), None);
    }

    #[test]
    fn slashes_and_dots_are_normalised_but_dotdot_never_matches() {
        let t = trie(&[("/a/b/", 1)]);
        assert_eq!(t.lookup(b"//a///b/c"), Some(1));
        assert_eq!(t.lookup(b"/a/./b"), Some(1));
        assert_eq!(t.lookup(b"/a/../a/b"), None);
    }

    #[test]
    fn root_entry_covers_everything_and_reinsert_replaces() {
        let mut t = trie(&[("/", 7), ("/x", 1)]);
        assert_eq!(t.lookup(b"/anything"), Some(7));
        t.insert(b"/x", 9);
        assert_eq!(t.lookup(b"/x/y"), Some(9));
    }

    #[test]
    fn ancestors_are_reached() {
        let t = trie(&[("/home/u/repo", 1)]);
        assert!(t.reaches(b"/"));
        assert!(t.reaches(b"/home"));
        assert!(t.reaches(b"/home/u"));
        assert!(t.reaches(b"/home/u/repo"));
        assert!(!t.reaches(b"/home/v"));
        assert!(!t.reaches(b"/home/u/repo/x"));
    }

    #[test]
    fn agrees_with_a_reference_scan() {
        // Differential check against the obvious implementation.
        let entries = ["/a", "/a/b", "/a/b/c/d", "/b/c", "/c/d/e", "/a/bb"];
        let mut t = Trie::new();
        for (i, e) in entries.iter().enumerate() {
            t.insert(e.as_bytes(), i as u32);
        }
        let reference = |p: &str| -> Option<u32> {
            let pc: Vec<&[u8]> = components(p.as_bytes()).collect();
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    let ec: Vec<&[u8]> = components(e.as_bytes()).collect();
                    pc.starts_with(&ec)
                })
                .max_by_key(|(_, e)| components(e.as_bytes()).count())
                .map(|(i, _)| i as u32)
        };
        let names = ["a", "b", "bb", "c", "d", "e"];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let next: Vec<String> = paths.iter().flat_map(|p| names.iter().map(move |n| format!("{p}/{n}"))).collect();
            paths.extend(next);
        }
        for p in &paths {
            assert_eq!(t.lookup(p.as_bytes()), reference(p), "{p}");
        }
    }
}
