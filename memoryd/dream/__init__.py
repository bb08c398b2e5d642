"""The dream engine: tidying memory while the user is away."""
