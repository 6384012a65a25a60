"""Dynamic Resource Allocation (resource.k8s.io/v1, structured parameters)."""
