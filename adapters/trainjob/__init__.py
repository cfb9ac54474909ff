"""TrainJob in: TrainJob + TrainingRuntime -> Pipeline, as Trainer v2.3.0 builds it. Pure."""
