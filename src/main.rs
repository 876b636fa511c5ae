//! The `beaver` binary: command line, configuration, logging, then run until signalled, as
//! nats-server does (see README, "Drop-in for nats-server"); all of it is
//! [`beaver::process`].

fn main() -> std::process::ExitCode {
    beaver::process::main(beaver::process::Variant::beaver())
}
