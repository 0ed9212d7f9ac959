//! Sampling shell: reads the kernel's figures under injectable roots and returns
//! `core::signal::Observations`. Holds no policy. TO BE IMPLEMENTED (helper C).
