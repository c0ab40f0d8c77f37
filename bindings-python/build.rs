//! pyo3's `Py_3_*` cfgs for this crate (the Python version it is built for).
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    pyo3_build_config::print_expected_cfgs();
}
