//! The unwinder linked in, not loaded: std names `libgcc_s` (for backtraces), and loading it at
//! every start, with its CPU-feature probe, cost a small removal 0.15 ms of GNU rm's 1.5 ms
//! (bench/RESULTS.md, 2026-11-29, "Fixed costs: the start"). A linker script named
//! `libgcc_s.so`, found first, hands the linker gcc's static `libgcc_eh.a` instead. Where the C
//! compiler does not know that archive, nothing changes. (A fully static glibc executable
//! starts sooner still, but glibc's NSS modules cannot be loaded into one: `--user NAME` of an
//! unknown name crashed it.)

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let static_crt = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|f| f.split(',').any(|f| f == "crt-static"));
    if target_os != "linux" || target_env != "gnu" || static_crt {
        return;
    }
    // The linker cargo was given for the target; else the host's C compiler, which knows the
    // target's archive only when the target is the host.
    let cc = match std::env::var("RUSTC_LINKER") {
        Ok(linker) => linker,
        Err(_) if std::env::var("TARGET").ok() == std::env::var("HOST").ok() => {
            std::env::var("CC").unwrap_or_else(|_| "cc".into())
        }
        Err(_) => return,
    };
    let Ok(out) = Command::new(&cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let archive = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !out.status.success() || !archive.is_absolute() || !archive.is_file() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let script = format!("INPUT({})\n", archive.display());
    std::fs::write(dir.join("libgcc_s.so"), script).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search=native={}", dir.display());
}
