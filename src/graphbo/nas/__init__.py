"""Neural architecture search (NASBOT): the architecture domain, OTMANN, and training."""
