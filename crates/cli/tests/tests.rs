//! Integration tests of the oio binary, one module per area.
