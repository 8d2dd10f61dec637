"""Infrastructure every use case shares: engines and units of work, background jobs, memory."""
