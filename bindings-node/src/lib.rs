//! Node bindings of user-questions. Work in progress.
