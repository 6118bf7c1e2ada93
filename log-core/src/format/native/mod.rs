//! This project's own segment format: checksummed little-endian frames of one record each ([`codec`]), the
//! `.lcindex` hint beside each segment (`hint`), the file names it uses ([`names`]), its directory layout
//! ([`layout`]), and its side of the cleaner's swap protocol (`commit`, [`removal`]) and of `repair`
//! (`repair`).

pub(crate) mod append;
pub(crate) mod check;
pub mod codec;
pub(crate) mod commit;
pub(crate) mod hint;
pub mod layout;
pub mod names;
pub(crate) mod open;
pub mod removal;
pub(crate) mod repair;
