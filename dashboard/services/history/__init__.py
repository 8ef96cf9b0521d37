"""What happened over time: work lost to preemption, a queue's usage and preemptions
over a window."""
