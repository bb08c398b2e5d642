from memoryctl.main import main

raise SystemExit(main())
