//! Link-time layout of the release binary (issue 12): the functions a running agent executes
//! are placed together at the start of `.text` from `link/hot-symbols.txt`, so the few 64 KiB
//! blocks the kernel maps around each executed page hold mostly executed code (the default
//! order scatters it over most of the binary). A symbol the build no longer has is skipped, so
//! a stale list only loses the packing, never breaks the build. `scripts/hot-symbols.sh`
//! regenerates the list (it sets `NODEWARDEN_LINK_MAP` to get the linker's map file).

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=NODEWARDEN_LINK_MAP");
    // The list is x86_64's, and the option is lld's: rustc links x86_64-unknown-linux-gnu with
    // rust-lld by default, other targets with the system linker, which may not know it.
    if std::env::var("PROFILE").as_deref() != Ok("release")
        || std::env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu")
    {
        return;
    }
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt");
    if list.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    if let Some(map) = std::env::var_os("NODEWARDEN_LINK_MAP") {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,-Map={}",
            Path::new(&map).display()
        );
    }
}
