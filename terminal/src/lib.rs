//! The terminal provider of user-questions (SPEC §8). Work in progress.
