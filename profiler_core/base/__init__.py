"""The foundation: configuration, options, events, run-directory names, records, errors, units and NVML."""
