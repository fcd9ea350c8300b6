//! The `fabsim` command line (clap): a thin layer over the library.

pub fn main() -> i32 {
    0
}
