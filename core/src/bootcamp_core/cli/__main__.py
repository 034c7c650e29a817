from bootcamp_core.cli.main import main

raise SystemExit(main())
