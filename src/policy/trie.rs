//! A path-component prefix trie: the longest entry that is a prefix of a
//! path, compared component by component, decides it.

/// Index of a node in [`Trie::nodes`].
type NodeId = u32;

/// No node.
const NONE: NodeId = NodeId::MAX;

#[derive(Debug, Clone)]
struct Node {
    /// The node this one is a child of (the root's is [`NONE`]).
    parent: NodeId,
    /// The component's bytes: `names[name.0..name.0 + name.1]`.
    name: (u32, u32),
    /// The value of an entry that ends at this node.
    value: Option<u32>,
    /// The next node whose (parent, name) hashes to the same key.
    next: NodeId,
}

/// The index's hasher: keys are already well-mixed 64-bit hashes.
#[derive(Default, Clone, Copy)]
struct Passthrough(u64);

impl std::hash::Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Index = std::collections::HashMap<u64, NodeId, std::hash::BuildHasherDefault<Passthrough>>;

/// Maps absolute paths to `u32` values (rule indices) by longest prefix.
///
/// `/a/b` is a prefix of `/a/b` and `/a/b/c`, never of `/a/bc`. Each edge is
/// found with one hash of (parent, component) in a table shared by all
/// nodes, so a lookup costs one probe per component whatever the number of
/// entries. Lookups do not allocate.
#[derive(Debug, Clone)]
pub struct Trie {
    nodes: Vec<Node>,
    names: Vec<u8>,
    index: Index,
}

impl Default for Trie {
    fn default() -> Self {
        Self {
            nodes: vec![Node { parent: NONE, name: (0, 0), value: None, next: NONE }],
            names: Vec::new(),
            index: Index::default(),
        }
    }
}

/// The non-empty components of a `/`-separated path; `.` is skipped.
///
/// Paths given to the trie are canonical, so `..` never appears; if it does it
/// is kept as a name, which matches no entry and so cannot widen access.
pub fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".")
}

/// A 64-bit hash of an edge: 8 bytes at a time, then a final avalanche
/// (the table uses the top bits as tags and the low bits as the bucket).
fn edge_key(parent: NodeId, name: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (u64::from(parent) ^ ((name.len() as u64) << 32)).wrapping_mul(K);
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        h = (h.rotate_left(23) ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    fn name(&self, node: &Node) -> &[u8] {
        &self.names[node.name.0 as usize..(node.name.0 + node.name.1) as usize]
    }

    fn child(&self, parent: NodeId, name: &[u8]) -> Option<NodeId> {
        let mut at = *self.index.get(&edge_key(parent, name))?;
        while at != NONE {
            let node = &self.nodes[at as usize];
            if node.parent == parent && self.name(node) == name {
                return Some(at);
            }
            at = node.next;
        }
        None
    }

    /// Sets the value of the entry for `path`, replacing an earlier one.
    pub fn insert(&mut self, path: &[u8], value: u32) {
        let mut at: NodeId = 0;
        for name in components(path) {
            at = match self.child(at, name) {
                Some(id) => id,
                None => {
                    let id = self.nodes.len() as NodeId;
                    let key = edge_key(at, name);
                    let next = self.index.insert(key, id).unwrap_or(NONE);
                    let offset = self.names.len() as u32;
                    self.names.extend_from_slice(name);
                    self.nodes.push(Node { parent: at, name: (offset, name.len() as u32), value: None, next });
                    id
                }
            };
        }
        self.nodes[at as usize].value = Some(value);
    }

    /// Heap bytes the trie holds (nodes, names and the edge table), for the
    /// memory-per-entry figure of `interpose bench`.
    pub fn heap_bytes(&self) -> usize {
        // hashbrown: one control byte per bucket plus the (key, value) slot.
        let slot = std::mem::size_of::<(u64, NodeId)>() + 1;
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.names.capacity() + self.index.capacity() * slot
    }

    /// The value of the longest entry that is a prefix of `path`.
    pub fn lookup(&self, path: &[u8]) -> Option<u32> {
        let mut at: NodeId = 0;
        let mut best = self.nodes[0].value;
        for name in components(path) {
            match self.child(at, name) {
                Some(id) => {
                    at = id;
                    if let Some(v) = self.nodes[id as usize].value {
                        best = Some(v);
                    }
                }
                None => break,
            }
        }
        best
    }

    /// Whether `path` is an entry or lies on the way to one (every component
    /// is a node of the trie).
    pub fn reaches(&self, path: &[u8]) -> bool {
        let mut at: NodeId = 0;
        for name in components(path) {
            match self.child(at, name) {
                Some(id) => at = id,
                None => return false,
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
    fn colliding_edges_are_told_apart() {
        // Force every edge into one chain: lookups still compare names.
        let mut t = Trie::new();
        let names: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            t.insert(format!("/{n}/x").as_bytes(), i as u32);
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(t.lookup(format!("/{n}/x/y").as_bytes()), Some(i as u32));
            assert_eq!(t.lookup(format!("/{n}/y").as_bytes()), None);
        }
        // A chain built by hand, whatever the hash does.
        let key = edge_key(0, b"n0");
        let first = t.index[&key];
        let mut other = t.nodes[first as usize].clone();
        other.next = first;
        other.name = (t.names.len() as u32, 3);
        t.names.extend_from_slice(b"zzz");
        t.nodes.push(other);
        t.index.insert(key, (t.nodes.len() - 1) as NodeId);
        assert_eq!(t.lookup(b"/n0/x"), Some(0), "found behind a colliding edge");
        assert_eq!(t.child(0, b"zzz"), None, "a name is found only under its own key");
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
