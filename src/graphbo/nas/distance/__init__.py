"""The OTMANN distance between networks (Kandasamy et al. 2018, Sec. 3): transport programs, batched and cached."""
