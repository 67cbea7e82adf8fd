//! The store under `browse`'s tree: entries in fixed chunks of 56 bytes, names in one byte
//! arena, each directory's sums climbing to its ancestors as entries arrive (deferred past
//! `CLIMB` levels until the directory is done). Indexes only; never touches the file system.

use std::collections::HashMap;

use super::{flag, Entry, Info, Sums, CHUNK, CHUNK_BITS, CLIMB, NAME_CHUNK, NAME_CHUNK_BITS, NONE};

pub(super) struct Store {
    pub(super) chunks: Vec<Vec<Entry>>,
    pub(super) len: u32,
    pub(super) names: Vec<Vec<u8>>,
    /// Sums that climbed `CLIMB` levels and wait at this (unfinished) directory.
    pub(super) deferred: HashMap<u32, Sums>,
    /// The device of every directory.
    pub(super) devs: HashMap<u32, u64>,
    /// Entries not kept because the tree is full (4 billion entries or names).
    pub(super) dropped: u64,
}

impl Store {
    pub(super) fn at(&self, i: u32) -> &Entry {
        &self.chunks[(i >> CHUNK_BITS) as usize][i as usize & (CHUNK - 1)]
    }

    pub(super) fn at_mut(&mut self, i: u32) -> &mut Entry {
        &mut self.chunks[(i >> CHUNK_BITS) as usize][i as usize & (CHUNK - 1)]
    }

    pub(super) fn name(&self, e: &Entry) -> &[u8] {
        let chunk = &self.names[(e.name >> NAME_CHUNK_BITS) as usize];
        let at = e.name as usize & (NAME_CHUNK - 1);
        &chunk[at..at + e.name_len as usize]
    }

    /// Copies `name` into the arena; where it starts (None: the arena is full).
    pub(super) fn push_name(&mut self, name: &[u8]) -> Option<u32> {
        let fits = self
            .names
            .last()
            .is_some_and(|c| c.len() + name.len() <= NAME_CHUNK);
        if !fits {
            if self.names.len() >= 1 << (32 - NAME_CHUNK_BITS) {
                return None;
            }
            self.names.push(Vec::with_capacity(NAME_CHUNK));
        }
        let chunk_index = self.names.len() - 1;
        let chunk = self.names.last_mut().expect("a chunk");
        let at = chunk.len();
        chunk.extend_from_slice(name);
        Some(((chunk_index as u32) << NAME_CHUNK_BITS) | at as u32)
    }

    /// Appends an entry (unlinked); its index (None: the tree is full).
    pub(super) fn push(&mut self, name: &[u8], mut e: Entry) -> Option<u32> {
        if self.len == NONE {
            self.dropped += 1;
            return None;
        }
        let Some(at) = self.push_name(name) else {
            self.dropped += 1;
            return None;
        };
        e.name = at;
        e.name_len = name.len() as u8;
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("a chunk").push(e);
        let i = self.len;
        self.len += 1;
        Some(i)
    }

    /// Links entry `i` first among `parent`'s children.
    pub(super) fn link(&mut self, parent: u32, i: u32) {
        let first = self.at(parent).first;
        let e = self.at_mut(i);
        e.parent = parent;
        e.next = first;
        self.at_mut(parent).first = i;
    }

    /// Adds `s` to `from` and up to `CLIMB` levels above it; the rest waits at the directory
    /// reached (if it is not finished) and climbs when it is. Stops at a hidden entry: its
    /// sums are no longer in its ancestors'.
    pub(super) fn climb(&mut self, from: u32, s: Sums) {
        let mut at = from;
        let mut steps = 0;
        while at != NONE {
            let e = self.at_mut(at);
            e.add(s);
            if e.flags & flag::HIDDEN != 0 {
                return;
            }
            let (parent, done) = (e.parent, e.flags & flag::DONE != 0);
            steps += 1;
            if steps > CLIMB && !done && parent != NONE {
                self.deferred.entry(at).or_default().add(s);
                return;
            }
            at = parent;
        }
    }

    /// Adds `s` to (`add`), or takes it from, every ancestor from `from` up, stopping after a
    /// hidden one (inclusive).
    pub(super) fn carry(&mut self, from: u32, s: Sums, add: bool) {
        let mut at = from;
        while at != NONE {
            let e = self.at_mut(at);
            if add {
                e.add(s)
            } else {
                e.sub(s)
            }
            if e.flags & flag::HIDDEN != 0 {
                return;
            }
            at = e.parent;
        }
    }

    /// Lets every waiting sum climb to the top: afterwards each total is exact.
    pub(super) fn settle(&mut self) {
        for (at, s) in std::mem::take(&mut self.deferred) {
            let e = self.at(at);
            if e.flags & flag::HIDDEN == 0 {
                self.carry(e.parent, s, true);
            }
        }
    }

    /// Marks `from` and every directory above it: something below could not be read.
    pub(super) fn error_above(&mut self, from: u32) {
        let mut up = from;
        while up != NONE && self.at(up).flags & flag::ERROR_BELOW == 0 {
            self.at_mut(up).flags |= flag::ERROR_BELOW;
            up = self.at(up).parent;
        }
    }

    /// The device of entry `i`: its own (a directory), else its directory's.
    pub(super) fn dev(&self, i: u32) -> u64 {
        match self.devs.get(&i) {
            Some(d) => *d,
            None if i == NONE => 0,
            None => self.devs.get(&self.at(i).parent).copied().unwrap_or(0),
        }
    }

    pub(super) fn info(&self, i: u32) -> Info {
        let e = self.at(i);
        Info {
            index: i,
            name: self.name(e).to_vec(),
            kind: e.kind,
            flags: e.flags,
            disk: e.disk,
            apparent: e.apparent,
            items: u64::from(e.items),
            mtime: e.mtime,
            ino: e.ino,
            parent: e.parent,
        }
    }

    pub(super) fn children(&self, dir: u32) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.at(dir).first;
        std::iter::from_fn(move || {
            (at != NONE).then(|| {
                let i = at;
                at = self.at(i).next;
                i
            })
        })
    }
}
