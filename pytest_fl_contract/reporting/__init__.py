"""What a run reports: case records and their summary, the header and JUnit properties."""
