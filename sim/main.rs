fn main() {
    std::process::exit(fabsim::cli::main());
}
