"""Planted notes with known answers, for scoring relevance on a generated vault (issue #14).

gen_vault.py writes pseudo-word notes ("kalomi rate sunoze"); plant(vault_dir) adds the ~30
English notes below and returns the judged set that goes with them. The notes come in clusters
that share words (three kayak notes, two "quarterly" notes, two "renewal" notes, notes that
mention each other's topics in passing), so that a query has near-misses to beat and ranking,
not mere matching, decides the score. Queries are of the kinds users type: title words (exact and
partial), inflected forms, words spread over two blocks of one note, a distinctive phrase, an
alias, a misspelling of a longer word.

The text is written for this file; nothing is taken from other vaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# path -> (frontmatter lines or None, body). The title is the frontmatter title, else the file name.
NOTES: dict[str, tuple[list[str] | None, str]] = {
    "areas/outdoors/Quarterly kayak maintenance.md": (
        ["title: Quarterly kayak maintenance", "aliases: [Kayak upkeep]", "tags: [outdoors, boats]"],
        """# Quarterly kayak maintenance

Every three months, whether or not the boats went out. Takes an afternoon.

## Hull
- Rinse the hull with fresh water, salt eats the fittings.
- Check the rudder cables for fraying and re-tension them.
- Wax the gelcoat where it scuffed on the launch ramp.

## Hatches
- Replace the hatch gaskets once they crack; spares are in the blue box.
- Leave the hatches open to dry before closing the boats up.

See [[Kayak storage rack]] for where everything lives afterwards.
"""),
    "areas/outdoors/Kayak storage rack.md": (
        None,
        """# Kayak storage rack

The wall rack in the garage holds both boats hull-up on padded arms. Straps go over the cockpit,
never across the thin part of the deck.

- Rack bolts into the studs, 40 cm apart.
- Paddles hang on the hooks to the left.

Maintenance happens on the trestles, not on the rack. The checklist is in [[Quarterly kayak maintenance]].
"""),
    "journal/2025/Kayak trip to the estuary.md": (
        ["title: Kayak trip to the estuary", "tags: [journal, outdoors]"],
        """# Kayak trip to the estuary

Launched at seven with the tide. The kayak felt heavy; the kayak rudder was stiff again, so the
kayak needs a look before the next kayak outing.

- Saw seals on the sandbank at low water.
- Paddled back against the wind, two hours.
- Lunch on the beach: cold pasta, too much coffee.

Next time bring a spare paddle leash.
"""),
    "projects/Bicycle tune-up checklist.md": (
        ["title: Bicycle tune-up checklist", "aliases: [Bike service]", "tags: [cycling]"],
        """# Bicycle tune-up checklist

Spring and autumn, before the long rides.

## Drivetrain
- Degrease and lubricate the chain, check stretch with the gauge.
- Inspect the cassette for hooked teeth.

## Brakes and tyres
- Replace the brake pads when the grooves are gone.
- Tyre pressure: 4.5 bar front, 5 bar rear.
"""),
    "home/Espresso grinder calibration.md": (
        None,
        """# Espresso grinder calibration

Dialing in a new bag of beans: start at setting 12 and adjust one step at a time.

- Target 18 g in, 36 g out, in 28 seconds.
- Sour and fast means grind finer; bitter and slow means coarser.

## Cleaning
Brush out the burrs every fortnight; the retained grounds go stale and taint the next shot.
"""),
    "home/Heat pump winter settings.md": (
        ["title: Heat pump winter settings", "tags: [home, energy]"],
        """# Heat pump winter settings

The installer set the flow temperature too high. What works for this house:

- Flow temperature 38 °C, weather compensation curve 0.6.
- Let the defrost cycles run; the steam from the outdoor unit is normal.

## Hot water
Legionella cycle once a week on Sunday night, when the electricity tariff is cheapest.
"""),
    "work/meetings/Incident postmortem template.md": (
        ["title: Incident postmortem template", "aliases: [Postmortem, Blameless review]", "tags: [template, work]"],
        """# Incident postmortem template

Write it within five working days of the incident. Blameless: describe systems, not people.

## Timeline
Times in UTC, from the first alert to the all-clear.

## Contributing factors
What made the failure possible, and what made it worse.

## Follow-up actions
Each action has an owner and a date, and lives in the tracker, not only here.
"""),
    "work/Database migration runbook.md": (
        ["title: Database migration runbook", "tags: [work, ops]"],
        """# Database migration runbook

For schema changes on the production cluster.

## Before
Take a snapshot of the primary and note its identifier in the change ticket.

## During
Run the migration from the bastion host inside a terminal multiplexer, never from a laptop.

## If it goes wrong
Rollback: stop the application, restore the snapshot, replay the write-ahead archive up to the
minute before the migration started.
"""),
    "work/On-call handover notes.md": (
        None,
        """# On-call handover notes

Handed over every Monday at ten. The outgoing person writes, the incoming person reads aloud.

- Open incidents and their owners.
- Alerts that fired more than twice: tune or delete them.
- Anything flaky in the database migration queue.
"""),
    "reading/Notes on Thinking, Fast and Slow.md": (
        ["title: Notes on Thinking, Fast and Slow", "aliases: [Kahneman]", "tags: [reading, psychology]"],
        """# Notes on Thinking, Fast and Slow

System 1 is fast, automatic and confident; System 2 is slow, effortful and lazy.

## Biases worth remembering
- Anchoring: the first number you hear drags every estimate towards it.
- The planning fallacy: projects take longer than the inside view predicts.
- Loss aversion: losing ten pounds hurts more than finding ten pounds pleases.

## What I changed
Estimates now start from the reference class of similar past projects.
"""),
    "people/Priya Raman.md": (
        ["title: Priya Raman", "aliases: [Priya]", "tags: [person]"],
        """# Priya Raman

Product designer on the payments team. Runs the monthly design critique.

- Prefers sketches on paper before any mockup.
- Allergic to hazelnuts; remember for the team lunch.
"""),
    "ideas/Solar panel subsidy.md": (
        None,
        """# Solar panel subsidy

The council grant covers a third of the installation cost for panels on south-facing roofs.

- Application closes at the end of March.
- Needs two quotes from certified installers.
- Would pair well with the heat pump: daytime generation, daytime heating.
"""),
    "home/garden/Greenhouse tomato seedlings.md": (
        ["title: Greenhouse tomato seedlings", "tags: [garden]"],
        """# Greenhouse tomato seedlings

Sown the first week of March on the heated mat: three varieties, twelve pots each.

## Pricking out
Move each seedling into its own pot when the first true leaves show.

## Hardening off
Two weeks of days outside and nights in before they go into the beds.
"""),
    "home/Moving house checklist.md": (
        ["title: Moving house checklist", "tags: [home]"],
        """# Moving house checklist

Six weeks out: book the van, start the boxes, tell the bank.

- Redirect the post for three months.
- Read the meters on the last day and photograph them.
- Label every box with its room, not its contents.
"""),
    "areas/Half marathon training plan.md": (
        ["title: Half marathon training plan", "tags: [running]"],
        """# Half marathon training plan

Race day is the second Sunday of April. Twelve weeks.

## Long runs
Sundays, building from 10 km to 19 km, at conversational pace.

## Intervals
Tuesdays: six times 800 m at 10k pace with 90 seconds of jogging between.

Rest on Fridays no matter what the plan says.
"""),
    "resources/art/Watercolour painting supplies.md": (
        None,
        """# Watercolour painting supplies

What is worth buying and what is not.

- Paper matters most: 300 gsm cold-pressed cotton.
- A small palette of six artist-grade pans beats a big student set.
- Two brushes: a size 10 round and a flat wash brush.
"""),
    "work/Quarterly budget forecast.md": (
        ["title: Quarterly budget forecast", "tags: [work, finance]"],
        """# Quarterly budget forecast

Submitted to finance in the last week of each quarter.

- Headcount is the biggest line; contractors are forecast separately.
- Cloud spend grows with traffic; use the trailing three months.
- Conference travel gets cut first when the forecast is over.
"""),
    "resources/Camera lens cleaning.md": (
        None,
        """# Camera lens cleaning

Blower first, brush second, cloth last. Never breathe on the front element in the cold.

- Lens fluid goes on the tissue, not on the glass.
- Check the sensor for dust by shooting a white wall at f/16.
"""),
    "home/Wifi mesh network setup.md": (
        ["title: Wifi mesh network setup", "aliases: [Home network]", "tags: [home, tech]"],
        """# Wifi mesh network setup

Three nodes: hallway, office, and the garden room over the wired backhaul.

- Separate guest network for visitors and the smart plugs.
- Firmware updates at 4 a.m. on Wednesdays.
"""),
    "reading/Book notes - The Overstory.md": (
        ["title: Book notes - The Overstory", "tags: [reading, fiction]"],
        """# Book notes - The Overstory

Nine people whose lives bend around trees.

- The idea I keep returning to: trees talk to each other through fungal networks under the soil.
- Too long in the middle; the last part earns it back.
"""),
    "projects/Beekeeping hive inspection.md": (
        ["title: Beekeeping hive inspection", "tags: [bees]"],
        """# Beekeeping hive inspection

Every nine days from April to July, on a warm still afternoon.

## Brood frames
Look for eggs, then for queen cells along the bottom edge of the frames.

## Pests
Count varroa mites on the sticky board after three days; treat above the threshold.
"""),
    "areas/languages/Japanese verb conjugation.md": (
        None,
        """# Japanese verb conjugation

Group 1 verbs change their final sound; group 2 verbs drop る; two irregulars, する and くる.

## Te-form
The te-form joins actions and builds the progressive: 食べている, eating.

## Practice
Ten verbs a day through all the forms, out loud.
"""),
    "work/Kubernetes cluster upgrade.md": (
        ["title: Kubernetes cluster upgrade", "tags: [work, ops]"],
        """# Kubernetes cluster upgrade

One minor version at a time, control plane first, then the node pools.

- Drain each node and wait for the pods to reschedule before the next.
- Read the deprecated API list before touching anything.
"""),
    "home/Car insurance renewal.md": (
        ["title: Car insurance renewal", "tags: [home, admin]"],
        """# Car insurance renewal

Renews on the 14th of September. Never accept the automatic renewal quote.

- Compare three quotes with the same excess and the same named drivers.
- Ask about the no-claims discount protection.
"""),
    "home/Passport renewal.md": (
        None,
        """# Passport renewal

Expires next June; some countries want six months left, so renew before February.

- New photo, digital code from the booth.
- Old passport is sent back with a corner cut off.
"""),
    "areas/Guitar practice routine.md": (
        ["title: Guitar practice routine", "tags: [music]"],
        """# Guitar practice routine

Thirty minutes a day beats two hours on Sunday.

## Warm-up
Chromatic runs and major scales in two positions, with the metronome at 70.

## Repertoire
Chord changes for the current song, then play it through once without stopping.
"""),
    "work/Hiring interview rubric.md": (
        ["title: Hiring interview rubric", "aliases: [Interview scorecard]", "tags: [work, hiring]"],
        """# Hiring interview rubric

Score each area from one to four, with evidence written down before the debrief.

- Problem solving, communication, collaboration, craft.
- A four needs an example, a one needs an example too.
"""),
    "home/kitchen/Kimchi fermentation.md": (
        ["title: Kimchi fermentation", "tags: [cooking, fermenting]"],
        """# Kimchi fermentation

Salt the napa cabbage for two hours, rinse three times, then the paste: gochugaru, garlic, ginger,
fish sauce, a little sugar.

Pack it tight in the jar and leave it on the counter for two days, then the fridge.
"""),
    "work/Accessibility audit findings.md": (
        ["title: Accessibility audit findings", "tags: [work, a11y]"],
        """# Accessibility audit findings

The external audit found fourteen issues on the checkout pages.

- Form fields without labels for screen readers.
- Focus order jumps from the basket to the footer.
- Contrast of the grey hint text fails on white.
"""),
    "ideas/Kayak camping weekend.md": (
        None,
        """# Kayak camping weekend

A two-day paddle with a night on the island: dry bags, the small tent, water for two days.

Only if the boats passed their maintenance and the forecast is under force four.
"""),
}

# (kind, query, relevant paths best first)
QUERIES: list[tuple[str, str, list[str]]] = [
    ("title", "quarterly kayak maintenance", ["areas/outdoors/Quarterly kayak maintenance.md"]),
    ("title", "kayak storage rack", ["areas/outdoors/Kayak storage rack.md"]),
    ("title", "bicycle tune-up checklist", ["projects/Bicycle tune-up checklist.md"]),
    ("title", "heat pump", ["home/Heat pump winter settings.md"]),
    ("title", "passport renewal", ["home/Passport renewal.md"]),
    ("title", "car insurance", ["home/Car insurance renewal.md"]),
    ("title", "priya raman", ["people/Priya Raman.md"]),
    ("title", "kimchi", ["home/kitchen/Kimchi fermentation.md"]),
    ("title-partial", "kayak maintenance", ["areas/outdoors/Quarterly kayak maintenance.md"]),
    ("title-partial", "quarterly budget", ["work/Quarterly budget forecast.md"]),
    ("title-partial", "espresso grinder", ["home/Espresso grinder calibration.md"]),
    ("title-partial", "postmortem template", ["work/meetings/Incident postmortem template.md"]),
    ("title-partial", "migration runbook", ["work/Database migration runbook.md"]),
    ("title-partial", "half marathon", ["areas/Half marathon training plan.md"]),
    ("title-partial", "thinking fast and slow", ["reading/Notes on Thinking, Fast and Slow.md"]),
    ("title-ranking", "maintenance", ["areas/outdoors/Quarterly kayak maintenance.md"]),
    ("title-ranking", "database migration", ["work/Database migration runbook.md"]),
    ("title-ranking", "kayak rudder", ["areas/outdoors/Quarterly kayak maintenance.md", "journal/2025/Kayak trip to the estuary.md"]),
    ("title-ranking", "renewal", ["home/Passport renewal.md", "home/Car insurance renewal.md"]),
    ("title-ranking", "checklist", ["home/Moving house checklist.md", "projects/Bicycle tune-up checklist.md"]),
    ("title-ranking", "quarterly", ["work/Quarterly budget forecast.md", "areas/outdoors/Quarterly kayak maintenance.md"]),
    ("title-ranking", "template", ["work/meetings/Incident postmortem template.md"]),
    ("inflection", "tomato seedling", ["home/garden/Greenhouse tomato seedlings.md"]),
    ("inflection", "move house", ["home/Moving house checklist.md"]),
    ("inflection", "hive inspections", ["projects/Beekeeping hive inspection.md"]),
    ("inflection", "conjugating japanese verbs", ["areas/languages/Japanese verb conjugation.md"]),
    ("inflection", "fermenting kimchi", ["home/kitchen/Kimchi fermentation.md"]),
    ("inflection", "renewing car insurance", ["home/Car insurance renewal.md"]),
    ("inflection", "upgrading kubernetes clusters", ["work/Kubernetes cluster upgrade.md"]),
    ("two-blocks", "rudder gaskets", ["areas/outdoors/Quarterly kayak maintenance.md"]),
    ("two-blocks", "snapshot rollback", ["work/Database migration runbook.md"]),
    ("two-blocks", "queen cells varroa", ["projects/Beekeeping hive inspection.md"]),
    ("two-blocks", "intervals long runs", ["areas/Half marathon training plan.md"]),
    ("two-blocks", "chain brake pads", ["projects/Bicycle tune-up checklist.md"]),
    ("two-blocks", "defrost legionella", ["home/Heat pump winter settings.md"]),
    ("phrase", "fungal networks", ["reading/Book notes - The Overstory.md"]),
    ("phrase", "planning fallacy", ["reading/Notes on Thinking, Fast and Slow.md"]),
    ("phrase", "cold-pressed cotton paper", ["resources/art/Watercolour painting supplies.md"]),
    ("phrase", "wired backhaul", ["home/Wifi mesh network setup.md"]),
    ("alias", "bike service", ["projects/Bicycle tune-up checklist.md"]),
    ("alias", "blameless review", ["work/meetings/Incident postmortem template.md"]),
    ("alias", "interview scorecard", ["work/Hiring interview rubric.md"]),
    ("alias", "kahneman", ["reading/Notes on Thinking, Fast and Slow.md"]),
    ("misspelling", "accesibility audit", ["work/Accessibility audit findings.md"]),
    ("misspelling", "kubernetis upgrade", ["work/Kubernetes cluster upgrade.md"]),
    ("misspelling", "watercolor painting", ["resources/art/Watercolour painting supplies.md"]),
    ("misspelling", "espreso calibration", ["home/Espresso grinder calibration.md"]),
]


def plant(vault_dir: Path) -> list[dict[str, Any]]:
    """Write the planted notes into vault_dir (overwriting same-named files) and return the judged set."""
    for rel, (front, body) in NOTES.items():
        path = vault_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = ("---\n" + "\n".join(front) + "\n---\n\n" if front else "") + body
        path.write_text(text, encoding="utf-8")
    judged = []
    for kind, query, relevant in QUERIES:
        for r in relevant:
            if r not in NOTES:
                raise ValueError(f"planted query {query!r} names an unplanted note {r}")
        judged.append({"kind": kind, "query": query, "relevant": relevant})
    return judged
