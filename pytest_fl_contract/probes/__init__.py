"""The compiler probes: standalone Triton kernels (battery), the defect each is evidence for, the table and command."""
