from coord.cli.entry import main

raise SystemExit(main())
