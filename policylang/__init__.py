"""policylang: policy-as-code for Kubernetes scheduling."""
