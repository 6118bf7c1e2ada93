//! This project's own segment format, its bytes: checksummed little-endian frames of one record each
//! ([`codec`]), the file names it uses ([`names`]) and the removal marker of the cleaner's swap ([`removal`]).
//! Its protocols above the bytes (the `.lcindex` hint, the directory layout, recovery, the swap, check and
//! repair) are in [`crate::protocol::native`].

pub(crate) mod append;
pub mod codec;
pub mod names;
pub mod removal;
