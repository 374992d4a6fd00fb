//! inventory
