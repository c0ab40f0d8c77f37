//! The C ABI of user-questions (SPEC §13). Work in progress.
