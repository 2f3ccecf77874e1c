"""What happened, afterwards: the attempt log (attemptlog), figures from it (stats), and the
portable prompt checked across deployments (evaluate).
"""
