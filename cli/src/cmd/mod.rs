//! The commands, a file each: its arguments (a clap `Args` struct) and its `run`.

pub mod advise;
pub mod analyze;
pub mod audit;
pub mod check;
pub mod clean;
pub mod compact;
pub mod dump;
pub mod generate;
pub mod refetch;
pub mod repair;
pub mod roll;
pub mod run;
pub mod shell;
pub mod status;
