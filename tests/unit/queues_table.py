"""The `trainweave queues` table of test_queues_view's ``cluster()`` at its ``NOW``: pinned by
test_queues_view and shown in docs/admins.md (test_docs checks the doc shows it)."""

TABLE = """\
ClusterQueue cpu-cq  cohort: -  admitted: 1  pending: 0
  cpu: cpu 4/32, memory 16Gi/128Gi reserved/nominal
  NAMESPACE  TRAINJOB       STEP                 ROLE         QUEUE  STATE     WAITED  HELD    GPU-h  PIPELINE GPU-h
  ml-team    ft2 [Running]  dataset-initializer  initializer  cpu    Admitted  0m30s   59m30s  0.000  0.000

ClusterQueue gpu-cq  cohort: ml  admitted: 2  pending: 2
  gpu-h100: cpu 72/128, nvidia.com/gpu 16/16 reserved/nominal
  NAMESPACE  TRAINJOB       STEP  ROLE     QUEUE  STATE              WAITED  HELD   GPU-h   PIPELINE GPU-h
  ml-team    ft [Running]   node  trainer  gpu    Admitted           40m00s  1h20m  21.333  22.333
  ml-team    ft2 [Running]  node  trainer  gpu    Pending (Pending)  45m00s  -      -       0.000
  team-b: other Workloads 1 admitted, 1 pending
"""
