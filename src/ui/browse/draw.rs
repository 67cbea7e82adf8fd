//! Draws `reclaim browse`'s screen from its state: a title line, the directory's path and
//! filters, its entries (mark, disk usage, apparent size, bars, items, newest modification,
//! name), a line for what is going on, and a status bar (the directory's totals, the file
//! system's free space, what waits in the trash and the reaper). Every name goes through
//! `sys::quote::visible` first: no byte of a name reaches the terminal as a control.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::app::{mark_of, App, Dialog, Graph};
use crate::engine::scan::tree::{flag, Info, Kind, SortBy};
use crate::sys::format::{bytes, group, plural};
use crate::sys::quote::visible;

/// Width of a size column ("1023.9 MiB").
const SIZE: usize = 10;

/// Which columns fit.
struct Cols {
    other_size: bool,
    items: bool,
    mtime: bool,
}

fn cols(width: u16) -> Cols {
    Cols {
        other_size: width >= 72,
        items: width >= 60,
        mtime: width >= 96,
    }
}

fn color_ok() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    // NO_COLOR set to anything but the empty string turns colours off (no-color.org).
    *OK.get_or_init(|| std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
}

fn fg(c: Color) -> Style {
    if color_ok() {
        Style::default().fg(c)
    } else {
        Style::default()
    }
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    if area.height < 8 || area.width < 40 {
        f.render_widget(
            Paragraph::new("reclaim browse: the terminal is too small"),
            area,
        );
        return;
    }
    app.poll_scan();
    let w = area.width as usize;
    let row = |y: u16| Rect::new(area.x, area.y + y, area.width, 1);
    let reverse = Style::default().add_modifier(Modifier::REVERSED);

    // Title.
    let right = scan_state(app);
    let left = " reclaim browse  ~ ? for help, q to quit";
    f.render_widget(
        Paragraph::new(fit_pair(left, &right, w)).style(reverse),
        row(0),
    );

    // Path, order and filters.
    f.render_widget(Paragraph::new(path_line(app, w)), row(1));

    // Column heads.
    let c = cols(area.width);
    f.render_widget(
        Paragraph::new(heads(app, &c)).style(Style::default().add_modifier(Modifier::DIM)),
        row(2),
    );

    // Entries.
    let list_h = (area.height - 5) as usize;
    app.refresh(false);
    app.scroll(list_h);
    let end = (app.top + list_h).min(app.rows.len());
    let shown = app.tree.infos(&app.rows[app.top.min(end)..end]);
    let dir = app.tree.info(app.dir);
    let total = if app.apparent { dir.apparent } else { dir.disk };
    let largest = if app.apparent {
        app.largest.1
    } else {
        app.largest.0
    };
    let mut lines = Vec::with_capacity(list_h);
    for info in &shown {
        let selected = Some(info.index) == app.selected;
        let mut line = entry_line(app, info, &c, total, largest);
        if selected {
            line = line.style(reverse);
        }
        lines.push(line);
    }
    if app.rows.is_empty() {
        let why = if app.query.name.is_some() || app.query.older_than.is_some() {
            "  (nothing here matches the filter; Esc shows all)"
        } else if app.scanning() && !dir.has(flag::DONE) {
            "  (scanning...)"
        } else {
            "  (empty directory)"
        };
        lines.push(Line::from(why));
    }
    f.render_widget(
        Paragraph::new(lines),
        Rect::new(area.x, area.y + 3, area.width, list_h as u16),
    );

    // What is going on.
    f.render_widget(Paragraph::new(activity(app)), row(area.height - 2));

    // Status bar.
    f.render_widget(
        Paragraph::new(status(app, &dir, w)).style(reverse),
        row(area.height - 1),
    );

    dialog(f, app, area);
    // On the screen once this frame is flushed: keys from then on may answer it.
    app.dialog.drawn();
}

/// `left` and `right` on one line of `w` cells.
fn fit_pair(left: &str, right: &str, w: usize) -> String {
    let (l, r) = (left.chars().count(), right.chars().count());
    if l + r + 1 > w {
        let mut s: String = left.chars().take(w).collect();
        s.push_str(&" ".repeat(w.saturating_sub(s.chars().count())));
        return s;
    }
    format!("{left}{}{right}", " ".repeat(w - l - r))
}

fn scan_state(app: &mut App) -> String {
    if let Some((f, by)) = app.import.clone() {
        let reading = app.scan.as_mut().is_some_and(|s| s.running());
        return format!(
            "import of {} by {}{} ",
            visible(f.as_os_str().as_encoded_bytes()),
            visible(by.as_bytes()),
            if reading { " (reading...)" } else { "" }
        );
    }
    let Some(s) = app.scan.as_mut() else {
        return String::new();
    };
    let running = s.running();
    // The directory scanned is not one of its items.
    let names = (s.live.names.load(Ordering::Relaxed) + s.live.dirs.load(Ordering::Relaxed))
        .saturating_sub(1);
    let errors = s.error_count();
    let mut errors = if errors > 0 {
        format!(", {} unreadable", group(errors))
    } else {
        String::new()
    };
    let dropped = app.tree.dropped();
    if dropped > 0 {
        errors.push_str(&format!(", {} not kept (too many)", group(dropped)));
    }
    if running {
        format!(
            "scanning: {} items, {}{errors}... ",
            group(names),
            bytes(s.live.allocated.load(Ordering::Relaxed))
        )
    } else {
        let took = s.took.map_or(0.0, |d| d.as_secs_f64());
        format!(
            "scanned {} items in {}{errors} ",
            group(names),
            crate::sys::format::duration(took)
        )
    }
}

fn path_line(app: &App, w: usize) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = visible(app.tree.path(app.dir).as_os_str().as_bytes());
    let order = match app.query.sort {
        SortBy::Disk => "disk usage",
        SortBy::Apparent => "apparent size",
        SortBy::Items => "items",
        SortBy::Modified => "modification time",
        SortBy::Name => "name",
    };
    let arrow = if app.query.descending { "v" } else { "^" };
    let mut extra = format!(" by {order} {arrow}");
    if let Some(n) = &app.query.name {
        extra.push_str(&format!(", names with \"{}\"", visible(n)));
    }
    if let Some(o) = &app.older_text {
        extra.push_str(&format!(", older than {o}"));
    }
    if !app.marks.is_empty() {
        extra.push_str(&format!(", {} marked", group(app.marks.len() as u64)));
    }
    let line = format!("--- {path} ---{extra} ");
    let mut s: String = line.chars().take(w).collect();
    let n = s.chars().count();
    if n < w {
        s.push_str(&"-".repeat(w - n));
    }
    s
}

fn heads(app: &App, c: &Cols) -> String {
    let mut s = String::from("   ");
    let (first, second) = ("Disk", "Apparent");
    s.push_str(&format!("{first:>SIZE$} "));
    if c.other_size {
        s.push_str(&format!("{second:>SIZE$} "));
    }
    s.push_str(match app.graph {
        Graph::Bar => "             ",
        Graph::Percent => "       ",
        Graph::Both => "                    ",
        Graph::Neither => "",
    });
    if c.items {
        s.push_str(&format!("{:>9} ", "Items"));
    }
    if c.mtime {
        s.push_str(&format!("{:<16} ", "Modified"));
    }
    s.push_str("Name");
    s
}

fn entry_line(app: &App, i: &Info, c: &Cols, total: u64, largest: u64) -> Line<'static> {
    let marked = if app.marks.contains(&i.index) {
        '*'
    } else {
        ' '
    };
    let mark = mark_of(i);
    let uncounted_dir = i.kind == Kind::Dir
        && (i.has(flag::MOUNT) || i.has(flag::SUBVOLUME))
        && i.has(flag::UNCOUNTED);
    let size = |n: u64| {
        if uncounted_dir {
            format!("{:>SIZE$}", "-")
        } else {
            format!("{:>SIZE$}", bytes(n))
        }
    };
    let mut spans = vec![Span::raw(format!("{marked}{mark} "))];
    let primary = Style::default().add_modifier(Modifier::BOLD);
    let scanning = i.kind == Kind::Dir && !i.has(flag::DONE);
    let dim = if scanning {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    };
    spans.push(Span::styled(
        size(i.disk),
        if app.apparent {
            dim
        } else {
            dim.patch(primary)
        },
    ));
    spans.push(Span::raw(" "));
    if c.other_size {
        spans.push(Span::styled(
            size(i.apparent),
            if app.apparent {
                dim.patch(primary)
            } else {
                dim
            },
        ));
        spans.push(Span::raw(" "));
    }
    let value = if app.apparent { i.apparent } else { i.disk };
    let bar = |w: usize| {
        let n = if largest == 0 || uncounted_dir {
            0
        } else {
            ((value as f64 / largest as f64) * w as f64).round() as usize
        };
        format!("[{}{}]", "#".repeat(n.min(w)), " ".repeat(w - n.min(w)))
    };
    let pct = || {
        if total == 0 || uncounted_dir {
            "      ".to_string()
        } else {
            format!("{:5.1}%", value as f64 * 100.0 / total as f64)
        }
    };
    match app.graph {
        Graph::Bar => spans.push(Span::raw(format!("{} ", bar(10)))),
        Graph::Percent => spans.push(Span::raw(format!("{} ", pct()))),
        Graph::Both => spans.push(Span::raw(format!("{} {} ", pct(), bar(10)))),
        Graph::Neither => {}
    }
    if c.items {
        let items = if i.kind == Kind::Dir && !uncounted_dir {
            group(i.items)
        } else {
            String::new()
        };
        spans.push(Span::raw(format!("{items:>9} ")));
    }
    if c.mtime {
        spans.push(Span::raw(format!("{:<16} ", when(i.mtime))));
    }
    let slash = if i.kind == Kind::Dir { "/" } else { " " };
    let mut name_style = Style::default();
    if i.has(flag::CANDIDATE) {
        name_style = name_style.patch(fg(Color::Yellow));
    }
    if marked == '*' {
        name_style = name_style.add_modifier(Modifier::BOLD);
    }
    spans.push(Span::styled(
        format!("{slash}{}", visible(&i.name)),
        name_style,
    ));
    Line::from(spans)
}

/// A modification time to the minute in local time (`-` when unknown).
pub fn when(t: i64) -> String {
    static ZONE: OnceLock<jiff::tz::TimeZone> = OnceLock::new();
    if t == i64::MIN {
        return "-".into();
    }
    match jiff::Timestamp::from_second(t) {
        Ok(ts) => {
            let zone = ZONE.get_or_init(crate::sys::format::local_zone);
            crate::sys::format::minute(&zone.to_datetime(ts))
        }
        Err(_) => format!("@{t}"),
    }
}

fn activity(app: &App) -> Line<'static> {
    if let Dialog::Prompt { older, input } = &app.dialog {
        let ask = if *older {
            "show entries older than (30d, 12h, 6mo; empty: all): "
        } else {
            "show names holding (Enter keeps it, Esc: all): "
        };
        return Line::from(vec![
            Span::styled(ask, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(visible(input.as_bytes())),
            Span::raw("_"),
        ]);
    }
    if let Some(j) = &app.job {
        let done = j.progress.done.load(Ordering::Relaxed);
        let total = j.progress.total.load(Ordering::Relaxed);
        let removed = j.progress.removal.entries();
        let mut s = format!("{}... ", j.what);
        if let Some(e) = j.pack.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            use crate::engine::pack::Event;
            s.push_str(&match e {
                Event::Listed { entries } => format!("listed {}", group(entries)),
                Event::Packing { entries, bytes: b } => {
                    format!("writing {} entries ({})", group(entries), bytes(b))
                }
                Event::Verifying { entries, .. } => format!("verifying {} entries", group(entries)),
                Event::Archived => "archive verified".into(),
                Event::Removing { files, .. } => format!("removed {} originals", group(files)),
                Event::Resuming => "resuming".into(),
            });
        } else if removed > 0 {
            s.push_str(&format!("{} removed", group(removed)));
        } else if total > 0 {
            s.push_str(&format!("{} of {}", group(done), group(total)));
        }
        s.push_str(&format!(" ({:.0} s)", j.started.elapsed().as_secs_f64()));
        return Line::from(Span::styled(
            s,
            Style::default().add_modifier(Modifier::BOLD),
        ));
    }
    match &app.message {
        Some((m, at)) if at.elapsed().as_secs() < 30 => Line::from(visible(m.as_bytes())),
        _ => Line::from(""),
    }
}

/// The status bar: the directory's totals, the file system's free space, what this view's
/// deletions leave in the trash, the reaper; in short words when the full ones do not fit
/// in `w` cells.
fn status(app: &App, dir: &Info, w: usize) -> String {
    let space = app
        .watch
        .as_ref()
        .and_then(|wt| wt.space.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let (disk, apparent, items) = (bytes(dir.disk), bytes(dir.apparent), group(dir.items));
    let mut long = format!(" Total disk usage: {disk}  Apparent size: {apparent}  Items: {items}");
    let mut short = format!(" {disk} ({apparent} apparent), {items} items");
    if let Some(sp) = space {
        if sp.total > 0 {
            let free = bytes(sp.free);
            long.push_str(&format!(" | free {free} of {}", bytes(sp.total)));
            short.push_str(&format!(" | free {free}"));
        }
        if sp.pending_entries > 0 {
            let pending = bytes(sp.pending_bytes);
            long.push_str(&format!(
                " | trash: {} ({pending}), {} restorable",
                plural(sp.pending_entries, "entry", "entries"),
                group(sp.restorable)
            ));
            short.push_str(&format!(
                " | trash: {} ({pending})",
                group(sp.pending_entries)
            ));
        }
        if let Some((state, rate)) = &sp.reaper {
            let r = if *rate > 0.0 {
                format!(" | reaper {state} {}", crate::sys::format::rate(*rate))
            } else {
                format!(" | reaper {state}")
            };
            long.push_str(&r);
            short.push_str(&r);
        }
    }
    if long.chars().count() <= w {
        long
    } else {
        short
    }
}

/// The dialog in front, if one is open.
fn dialog(f: &mut Frame, app: &App, area: Rect) {
    let (title, lines, foot): (String, Vec<String>, &str) = match &app.dialog {
        Dialog::None | Dialog::Prompt { .. } => return,
        Dialog::Confirm { title, lines, .. } => {
            (title.clone(), lines.clone(), "y: yes   n, Esc: no")
        }
        Dialog::Help { scroll } => {
            let all = super::help::lines();
            let skip = (*scroll as usize).min(all.len().saturating_sub(1));
            (
                "reclaim browse: keys".into(),
                all[skip..].to_vec(),
                "j/k: scroll   any other key: close",
            )
        }
        Dialog::Details(i) => ("Details".into(), details(app, *i), "any key: close"),
        Dialog::Note { title, lines, .. } => (title.clone(), lines.clone(), "any key: close"),
    };
    let inner_w = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([title.chars().count() + 2, foot.chars().count()])
        .max()
        .unwrap_or(20);
    let w = (inner_w as u16 + 4).min(area.width.saturating_sub(2));
    let h = (lines.len() as u16 + 4).min(area.height.saturating_sub(2));
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    let mut text: Vec<Line> = lines.into_iter().map(Line::from).collect();
    text.push(Line::from(""));
    text.push(Line::from(Span::styled(
        foot,
        Style::default().add_modifier(Modifier::DIM),
    )));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" {title} ")),
        ),
        r,
    );
}

fn details(app: &App, i: u32) -> Vec<String> {
    let e = app.tree.info(i);
    let kind = match e.kind {
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link (never followed)",
        Kind::Other => "special file (FIFO, socket or device)",
    };
    let mut v = vec![
        format!("Name:     {}", visible(&e.name)),
        format!("Path:     {}", app.shown(i)),
        format!("Type:     {kind}"),
        format!("Disk:     {}", crate::sys::format::bytes_exact(e.disk)),
        format!("Apparent: {}", crate::sys::format::bytes_exact(e.apparent)),
    ];
    if e.kind == Kind::Dir {
        v.push(format!("Items:    {}", group(e.items)));
        v.push(format!("Newest:   {}", when(e.mtime)));
    } else {
        v.push(format!("Modified: {}", when(e.mtime)));
    }
    v.push(format!("Inode:    {}", e.ino));
    for n in super::app::flag_names(&e) {
        v.push(format!("It is {n}."));
    }
    if e.has(flag::CANDIDATE) {
        v.push(format!("Pack it: p here, or reclaim pack {}", app.shown(i)));
    }
    v
}
