"""Every board rule, once: items, claims, leases, fencing, reservations, packages, evidence."""
