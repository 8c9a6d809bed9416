# docs/: manual pages
