//! `pack-backhand DIR OUT`: DIR into the squashfs image OUT with backhand's writer (zstd,
//! default level), as a peer in bench/pack.sh. Files are pushed by path and opened when the
//! image is written.

use std::path::{Path, PathBuf};

use backhand::compression::Compressor;
use backhand::{FilesystemCompressor, FilesystemWriter, NodeHeader};

fn header(md: &std::fs::Metadata) -> NodeHeader {
    use std::os::unix::fs::MetadataExt;
    NodeHeader {
        permissions: (md.mode() & 0o7777) as u16,
        uid: md.uid(),
        gid: md.gid(),
        mtime: md.mtime().clamp(0, u32::MAX as i64) as u32,
    }
}

fn walk(fs: &mut FilesystemWriter<'_, '_, '_>, base: &Path, rel: &Path) {
    let mut names: Vec<PathBuf> = std::fs::read_dir(base.join(rel))
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().into())
        .collect();
    names.sort();
    for n in names {
        let r = rel.join(&n);
        let p = base.join(&r);
        let md = std::fs::symlink_metadata(&p).expect("lstat");
        if md.is_dir() {
            fs.push_dir(&r, header(&md)).expect("push_dir");
            walk(fs, base, &r);
        } else if md.file_type().is_symlink() {
            let t = std::fs::read_link(&p).expect("readlink");
            fs.push_symlink(t, &r, header(&md)).expect("push_symlink");
        } else if md.is_file() {
            fs.push_file_from_path(p, &r, header(&md)).expect("push_file");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, out) = (Path::new(&args[1]), &args[2]);
    let mut fs = FilesystemWriter::default();
    fs.set_compressor(FilesystemCompressor::new(Compressor::Zstd, None).expect("zstd"));
    walk(&mut fs, dir, Path::new(""));
    let file = std::fs::File::create(out).expect("create");
    let mut w = std::io::BufWriter::new(file);
    fs.write(&mut w).expect("write");
}
