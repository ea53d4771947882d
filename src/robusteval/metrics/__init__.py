"""Metrics: pure functions over answer matrices (items x variants), with bootstrap CIs by item."""
