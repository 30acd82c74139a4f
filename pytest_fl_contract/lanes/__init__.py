"""The lane runner: ``ci/manifest.yaml`` (lanes x steps), running a lane, merged JUnit and
its Markdown summary, importing torch_fl lane files, and their ``fl-contract`` commands."""
