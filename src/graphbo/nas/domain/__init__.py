"""The architecture domain of NASBOT: networks as labelled DAGs, their constraints, modifiers, initial pools and ArchitectureSpace."""
