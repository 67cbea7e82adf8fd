//! `reclaim browse`'s help screen (`?`): the keys, and what the marks before names mean.
//! docs/browse.md says the same at length.

/// What `reclaim browse --help` says after the options: the keys in short (the help screen
/// lists them as `KEYS`; docs/browse.md in full), the promises and the exit status.
pub const COMMAND_LINE: &str = "\
Keys (as ncdu's): up/down or k/j move, right/Enter/l opens, left/h/Backspace goes up;
s size, C items, M modification time, n name sort; a apparent size or disk usage;
g bars; i details; space marks; d deletes the marked or selected entries (into the
trash, restorable with u while the grace window lasts); e empties a directory; p packs
one; r scans again; / filters by name; o shows entries older than an age; ? help; q quits.

Nothing is ever followed through a symlink; other file systems are shown, not entered
unless asked (Enter on them). Where no trash can take an entry, removing it for good is
asked first. Exit status: 0, 1 if an action failed for some entry, 2 usage error,
128+N stopped by signal N.";

/// The keys, as the help screen lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("up, k / down, j", "move (PgUp, PgDn, Home, End)"),
    ("right, l, Enter", "open the directory"),
    ("left, h, Backspace", "back to the directory above"),
    ("s", "sort by size (again: reverse)"),
    ("C", "sort by items"),
    ("M", "sort by modification time"),
    ("n", "sort by name"),
    ("a", "sizes: disk usage / apparent size"),
    ("g", "bars: graph, percentage, both, none"),
    ("i", "details of the entry"),
    ("space", "mark or unmark (d acts on the marked)"),
    ("d", "delete: into the trash, restorable with u"),
    ("u", "undo the last deletion (grace window)"),
    ("e", "empty the directory (it stays)"),
    ("p", "pack the directory into one archive"),
    ("r", "scan this directory again"),
    ("/", "show names holding a text (Esc: all)"),
    ("o", "show entries older than an age (30d)"),
    ("Esc", "clear marks, then filters"),
    ("?", "this help"),
    ("q", "quit"),
];

/// The marks before names.
pub const MARKS: &[(&str, &str)] = &[
    ("*", "marked"),
    ("!", "could not be read (in full)"),
    (".", "something below could not be read"),
    (">", "another file system, not entered (Enter asks)"),
    ("^", "a btrfs subvolume, not entered (Enter asks)"),
    ("@", "a symbolic link or special file (never followed)"),
    ("H", "a hard link: its size counted once"),
    ("P", "a pack candidate: many old small files"),
    ("e", "an empty directory"),
    ("<", "excluded by the scan that wrote the import"),
];

/// The help screen's lines.
pub fn lines() -> Vec<String> {
    let mut v = vec!["Keys".to_string()];
    for (k, what) in KEYS {
        v.push(format!("  {k:<20} {what}"));
    }
    v.push(String::new());
    v.push("Marks before names".into());
    for (m, what) in MARKS {
        v.push(format!("  {m:<3} {what}"));
    }
    v.push(String::new());
    v.push("Deleting hides into the file system's trash at once (as".into());
    v.push("`reclaim rm -r --background --grace`); the reaper frees it after".into());
    v.push("the grace window. Nothing is ever followed through a symlink.".into());
    v
}
